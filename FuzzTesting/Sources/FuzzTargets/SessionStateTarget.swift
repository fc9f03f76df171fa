import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleTestKit
import HuddleWire

/// The stateful fuzzer (TEST-MATRIX FZ2): one authenticated member of a simulated three-member session feeds a
/// fuzzer-chosen sequence of messages (any bytes, on valid frames of every channel a member reaches, plus
/// structure-aware journal announcements and chunk requests) to a victim that runs the real ``Endpoint``,
/// ``SessionCore`` and ``JournalCore``, with simulated time passing between them.
///
/// Invariants checked after every input, beyond "no crash": the victim's bounded state stays within its named limits
/// (journal attachments and deferred announcements; the early-message hold too, though a member's messages never go
/// there), and the third member is not affected: it and the victim still see each other as members, and a message
/// it sends afterwards reaches the victim. The sender is a member, so paths for non-members are not reached here.
///
/// Input format, repeated until the bytes run out: an operation byte (its value modulo 8 picks the kind), then for the
/// payload kinds a length byte and that many payload bytes (fewer if the input ends):
/// 0 control message (channel 1), 1 journal control (channel 2), 2 journal bulk (channel 200), 3 messenger message
/// (channel 16), 4 messenger datagram (channel 16), 5 wait (next byte x 10 ms), 6 ANNOUNCE of a manifest signed by a
/// key the next byte picks (size from the two after, in 2 KiB), 7 CHUNK_REQUEST for the shared attachment (index from the next
/// byte).
public enum SessionStateTarget: FuzzTarget {
    public static let name = "session-state"

    static let victim = 0
    static let attacker = 1
    static let bystander = 2
    static let attachment = AttachmentID(bytes: [UInt8](repeating: 0x5A, count: 16))!
    static let marker: [UInt8] = Array("bystander still heard".utf8)

    /// The session, formed once (the network is a value: every input starts from a copy of it).
    nonisolated(unsafe) static let formed: (net: SimulatedNetwork<MemberNode>, session: TestSession) = {
        do {
            return try formSession()
        } catch {
            preconditionFailure("the fuzzer's session did not form: \(error)")
        }
    }()

    static func formSession() throws -> (net: SimulatedNetwork<MemberNode>, session: TestSession) {
        var session = TestSession(count: 3, seed: 7)
        var net = SimulatedNetwork(
            seed: 7, nodes: session.nodes(), conditions: LinkConditions(latency: .milliseconds(2)))
        let founding = session.founding(victim, address: net.address(of: victim))
        let grant = session.invitation()
        try net.withNode(victim) { node in
            node.start(founding, now: .zero)
            node.update(now: .zero) { $0.openInvitation(grant) }
        }
        let hints = [(staticKey: session.staticKey(victim), addresses: [net.address(of: victim)])]
        for index in [attacker, bystander] {
            let joining = session.joining(index, address: net.address(of: index), grant: grant, hints: hints)
            let now = net.now
            try net.withNode(index) { $0.start(joining, now: now) }
        }
        guard
            try net.run(
                until: { net in (0..<3).allSatisfy { net.node($0)?.activeKeys.count == 3 } }, timeout: .seconds(20))
        else { throw net.failure("the mesh did not form") }
        let key = session.identities[victim].signingKey
        let now = net.now
        try net.withNode(victim) { node in
            _ = try node.share([UInt8](repeating: 0xC3, count: 200_000), id: attachment, signingKey: key, now: now)
        }
        try net.run(for: .seconds(2))
        return (net, session)
    }

    public static func run(_ input: UnsafeRawBufferPointer) {
        var (net, session) = formed
        let victimKey = session.staticKey(victim)
        var bytes = Array(input)[...]
        var operations = 0
        while let operation = bytes.popFirst(), operations < 256 {
            operations += 1
            switch operation % 8 {
            case 0, 1, 2, 3:
                let channels = [MembershipMessage.channel, JournalMessage.controlChannel, JournalMessage.bulkChannel]
                let channel = operation % 8 < 3 ? channels[Int(operation % 8)] : ChannelID(16)
                let payload = take(&bytes)
                _ = try? net.withNode(attacker) { $0.send(payload, on: channel, to: victimKey) }
            case 4:
                let payload = take(&bytes)
                _ = try? net.withNode(attacker) { $0.sendDatagram(payload, on: ChannelID(16), to: victimKey) }
            case 5:
                let tenths = Int64(bytes.popFirst() ?? 1)
                try? net.run(for: .milliseconds(10 * tenths))
            case 6:
                let signer = bytes.popFirst() ?? 0
                // Up to 128 MiB in 2 KiB steps: enough to reach the per-author byte bound and the size limit.
                let size = (UInt64(bytes.popFirst() ?? 0) << 8 | UInt64(bytes.popFirst() ?? 0)) << 11
                guard let key = try? Ed25519PrivateKey(seedBytes: [UInt8](repeating: signer, count: 32)),
                    let manifest = try? AttachmentManifest(
                        id: AttachmentID(bytes: [UInt8](repeating: signer, count: 15) + [UInt8(operations)])!,
                        size: size, root: [UInt8](repeating: signer, count: 32), metadata: [], signingKey: key)
                else { continue }
                let message = JournalMessage.announce(manifest).encoded()
                _ = try? net.withNode(attacker) { $0.send(message, on: JournalMessage.controlChannel, to: victimKey) }
            default:
                let index = Int(bytes.popFirst() ?? 0)
                let message = JournalMessage.chunkRequest(attachment, index: index).encoded()
                _ = try? net.withNode(attacker) { $0.send(message, on: JournalMessage.controlChannel, to: victimKey) }
            }
            try? net.run(for: .milliseconds(5))
        }
        try? net.run(for: .milliseconds(300))
        check(&net, session: session)
    }

    /// The next length-prefixed payload.
    static func take(_ bytes: inout ArraySlice<UInt8>) -> [UInt8] {
        let length = Int(bytes.popFirst() ?? 0)
        let payload = Array(bytes.prefix(length))
        bytes = bytes.dropFirst(payload.count)
        return payload
    }

    static func check(_ net: inout SimulatedNetwork<MemberNode>, session: TestSession) {
        let victimNode = net.node(victim)!
        let early = victimNode.core?.earlyMessagesHeld ?? 0
        precondition(
            early <= 2 * ProtocolLimits.maxEarlyMessagesPerPeer, "the victim holds \(early) early messages")
        let journal = victimNode.journal.state
        precondition(journal.manifests.count <= ProtocolLimits.maxJournalAttachments, "journal over its limit")
        precondition(
            journal.deferredAnnounceCount <= 4 * ProtocolLimits.maxDeferredAnnouncesPerAuthor,
            "\(journal.deferredAnnounceCount) deferred announcements")
        let bystanderKey = session.staticKey(bystander)
        let victimKey = session.staticKey(victim)
        precondition(victimNode.activeKeys.contains(bystanderKey), "the victim lost the bystander")
        precondition(net.node(bystander)!.activeKeys.contains(victimKey), "the bystander lost the victim")
        let sent = (try? net.withNode(bystander) { $0.send(marker, on: ChannelID(16), to: victimKey) }) ?? false
        precondition(sent, "the bystander cannot send to the victim")
        let heard =
            (try? net.run(
                until: { net in
                    net.node(victim)!.messages.contains { $0.sender == bystanderKey && $0.bytes == marker }
                }, timeout: .seconds(5))) ?? false
        precondition(heard, "a message from the bystander did not reach the victim")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var random = ChaChaRandomGenerator(seed: 2)
        let identity = Identity(using: &random)
        let activity = MembershipMessage.activity(
            ActivityRecord(clock: 9, author: identity.publicIdentity.signingKey, payload: Array("{}".utf8))
        ).encoded()
        let have = JournalMessage.have(attachment, ranges: [0..<4]).encoded()
        func payload(_ operation: UInt8, _ bytes: [UInt8]) -> [UInt8] { [operation, UInt8(bytes.count)] + bytes }
        return [
            ("control-activity", payload(0, activity)),
            ("journal-have", payload(1, have)),
            ("messenger", payload(3, Array("hello".utf8)) + [5, 3] + payload(4, [1, 2, 3])),
            ("announce-and-wait", [6, 9, 0, 200, 5, 10, 6, 9, 1, 0]),
            ("chunk-requests", [7, 0, 7, 1, 7, 3, 7, 200, 5, 20]),
        ]
    }
}
