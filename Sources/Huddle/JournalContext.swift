import HuddleProtocol
import HuddleSession
import NIOConcurrencyHelpers

/// The observable journal of one session, shared by its ``Journal`` handles, the ``Journal/Attachment`` values and the
/// node's ``SessionEngine``, which applies the journal core's events to it.
final class JournalContext: Sendable {
    private struct State {
        var handles: [AttachmentID: AttachmentHandle] = [:]
        var order: [AttachmentID] = []
        var attachments: [AttachmentID: Journal.Attachment] = [:]
        /// Every participant this node has seen in the session, by identity fingerprint, to name authors who left.
        var seen: [String: Participant] = [:]
        var store: FileChunkStore?
    }

    /// The current attachments, in the order they were added or announced.
    let list = Broadcast<[Journal.Attachment]>([])
    private let state = NIOLockedValueBox(State())

    /// The session's chunk store, once the session is installed.
    var store: FileChunkStore? {
        get { state.withLockedValue { $0.store } }
        set { state.withLockedValue { $0.store = newValue } }
    }

    /// The attachment with `id`, if the journal has it.
    func attachment(_ id: AttachmentID) -> Journal.Attachment? { state.withLockedValue { $0.attachments[id] } }

    /// Remembers a participant, so attachments it authored name it even after it left.
    func saw(_ participant: Participant) {
        state.withLockedValue { $0.seen[participant.id] = participant }
    }

    /// Applies one journal event.
    func apply(_ event: JournalEvent) {
        switch event {
        case .added(let manifest):
            let list = state.withLockedValue { state -> [Journal.Attachment]? in
                guard state.handles[manifest.id] == nil, let store = state.store else { return nil }
                let handle = AttachmentHandle(id: manifest.id, size: manifest.size, store: store)
                let attachment = Journal.Attachment(
                    manifest: manifest, author: state.seen[manifest.author.fingerprint], handle: handle)
                state.handles[manifest.id] = handle
                state.attachments[manifest.id] = attachment
                state.order.append(manifest.id)
                return state.order.compactMap { state.attachments[$0] }
            }
            if let list { self.list.update(list) }
        case .progress(let id, let verified):
            guard let handle = handle(id) else { return }
            handle.update(AttachmentProgress(verifiedBytes: verified, size: handle.size, status: .fetching))
        case .completed(let id):
            guard let handle = handle(id) else { return }
            handle.update(AttachmentProgress(verifiedBytes: handle.size, size: handle.size, status: .complete))
        case .paused(let id):
            guard let handle = handle(id) else { return }
            let verified = UInt64(handle.progress.value.verifiedBytes)
            handle.update(AttachmentProgress(verifiedBytes: verified, size: handle.size, status: .paused))
        case .failed(let id, let error):
            guard let handle = handle(id) else { return }
            let verified = UInt64(handle.progress.value.verifiedBytes)
            handle.update(
                AttachmentProgress(verifiedBytes: verified, size: handle.size, status: .failed(HuddleError(error))))
        case .removed(let id):
            let (handle, list) = state.withLockedValue { state -> (AttachmentHandle?, [Journal.Attachment]) in
                let handle = state.handles.removeValue(forKey: id)
                state.attachments[id] = nil
                state.order.removeAll { $0 == id }
                return (handle, state.order.compactMap { state.attachments[$0] })
            }
            guard let handle else { return }
            handle.markRemoved()
            self.list.update(list)
        }
    }

    /// The session is over: every attachment is gone from this node (its files are deleted) and every stream ends.
    func finish() {
        let handles = state.withLockedValue { state -> [AttachmentHandle] in
            let handles = Array(state.handles.values)
            state.handles.removeAll()
            state.attachments.removeAll()
            state.order.removeAll()
            return handles
        }
        for handle in handles { handle.markRemoved() }
        list.update([])
        list.finish()
    }

    private func handle(_ id: AttachmentID) -> AttachmentHandle? { state.withLockedValue { $0.handles[id] } }
}
