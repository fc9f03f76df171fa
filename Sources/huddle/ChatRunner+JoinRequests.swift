import Huddle

/// Ask to join in the chat: `join-request` events for requests and their answers, `/admit NAME` and `/deny NAME`.
extension ChatRunner {
    /// Prints every ask-to-join request and answer of the session, from its start, until it is over.
    func followJoinRequests(_ changes: AsyncStream<JoinRequestChange>) async {
        for await change in changes { output.joinRequest(change) }
    }

    /// Admits (`admit`) or denies the waiting request named `name` (the joiner's name, or a prefix of its id); the
    /// request stream then prints `join-request-answered`.
    func answer(_ name: String, admit: Bool) async {
        let code = admit ? "admit-failed" : "deny-failed"
        let pending = session.pendingJoinRequests
        let byName = pending.filter { $0.name == name }
        let matches = byName.isEmpty ? pending.filter { !name.isEmpty && $0.id.hasPrefix(name.lowercased()) } : byName
        guard matches.count == 1, let request = matches.first else {
            output.error(
                code: code,
                matches.isEmpty
                    ? "nobody named \(name) is asking to join (\(pending.count) request(s) waiting)"
                    : "\(matches.count) requests match \(name); give a prefix of the id instead")
            return
        }
        do {
            if admit { try await session.admit(request) } else { try await session.deny(request) }
        } catch {
            output.error(code: code, "\(error)")
        }
    }
}

extension EventOutput {
    /// `join-request` (someone asks to join) or `join-request-answered` (`outcome` admitted, denied or expired; `by`
    /// is the participant who answered).
    func joinRequest(_ change: JoinRequestChange) {
        let request = change.request
        switch change {
        case .asked:
            emit(
                "join-request", ["request": .string(request.id), "name": .string(request.name)],
                text: "? \(request) asks to join: /admit \(request.name) or /deny \(request.name)")
        case .admitted(_, let by):
            answered(request, "admitted", by: by, text: "\(request) was let in by \(by)")
        case .denied(_, let by):
            answered(request, "denied", by: by, text: "\(request) was turned away by \(by)")
        case .expired:
            answered(request, "expired", by: nil, text: "nobody answered \(request) in time; it was turned away")
        }
    }

    private func answered(_ request: JoinRequest, _ outcome: String, by: Participant?, text: String) {
        emit(
            "join-request-answered",
            [
                "request": .string(request.id), "name": .string(request.name), "outcome": .string(outcome),
                "by": by.map { .string($0.id) } ?? .null, "by_name": by.map { .string($0.name) } ?? .null,
            ], text: text)
    }
}
