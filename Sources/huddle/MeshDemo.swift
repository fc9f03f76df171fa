import Foundation
import Huddle
import HuddleCrypto
import HuddleTransport
import Logging
import NIOConcurrencyHelpers

/// `huddle demo`: four nodes in this process, on loopback UDP, go through a session's life: one hosts, two join by
/// ticket, they chat, the host shares an attachment and leaves, the others carry on, and a late joiner is caught up
/// on the shared state and receives the attachment from the members who remain.
struct MeshDemo {
    /// The demo's activity: a shared whiteboard.
    struct Whiteboard: GroupActivity {
        static let activityIdentifier = "org.huddle.demo.whiteboard"
        var name: String
        var metadata: GroupActivityMetadata { GroupActivityMetadata(title: name, type: .createTogether) }
    }

    /// The size of the attachment the demo shares.
    static let attachmentSize = 8 * 1024 * 1024

    /// The catch-up state a member sends a newcomer.
    struct BoardState: Codable, Sendable {
        var strokes: [String]
    }

    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant

    init() {
        started = clock.now
    }

    private func log(_ line: String) {
        let elapsed = clock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        print(String(format: "[%7.1f ms] ", milliseconds) + line)
    }

    private func startNode(_ name: String) async throws -> HuddleNode {
        var random = SystemRandomGenerator()
        var logger = Logger(label: "huddle.demo")
        logger.logLevel = .error
        let node = try await HuddleNode.start(
            .init(identity: Identity(using: &random), name: name, logger: logger))
        log("\(name) is up at \(node.localAddress) (identity \(node.fingerprint.prefix(9)))")
        return node
    }

    /// Waits until `condition` holds or `seconds` pass; throws a readable error on timeout.
    private func waitUntil(_ what: String, seconds: Double = 10, _ condition: () -> Bool) async throws {
        let deadline = clock.now + .seconds(seconds)
        while !condition() {
            guard clock.now < deadline else { throw CLIError("demo: timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Collects chat lines a member receives.
    final class Inbox: Sendable {
        private let lines = NIOLockedValueBox<[String]>([])
        var all: [String] { lines.withLockedValue { $0 } }
        func start(_ messenger: Messenger, owner: String) -> Task<Void, Never> {
            Task {
                for await (line, context) in messenger.messages(of: ChatLine.self) {
                    lines.withLockedValue { $0.append("\(context.source.name) -> \(owner): \(line.text)") }
                }
            }
        }
    }

    func run() async throws {
        print("Huddle demo: an encrypted peer-to-peer session on loopback UDP, four nodes in this process.\n")
        let ana = try await startNode("ana")
        let ben = try await startNode("ben")
        let cy = try await startNode("cy")
        let dee = try await startNode("dee")
        defer { Task { for node in [ana, ben, cy, dee] { await node.shutdown() } } }

        // Ana starts a whiteboard session and invites the others.
        let anaSession = try await ana.activate(Whiteboard(name: "team sketch"))
        try await anaSession.join()
        let ticket = try await anaSession.makeInvitation(validFor: .seconds(600))
        log("ana started \"team sketch\"; ticket (\(ticket.ticket.count) characters): \(ticket.ticket.prefix(40))...")

        var board = ["circle by ana", "arrow by ana"]
        let anaMessenger = Messenger(session: anaSession)
        let anaInbox = Inbox()
        let anaTask = anaInbox.start(anaMessenger, owner: "ana")

        // Ben and Cy join with the ticket (a parse, then a Noise IKpsk2 handshake to a member it names).
        var sessions: [String: GroupSession<Whiteboard>] = [:]
        var messengers: [String: Messenger] = [:]
        var inboxes: [String: Inbox] = ["ana": anaInbox]
        var tasks = [anaTask]
        for (name, node) in [("ben", ben), ("cy", cy)] {
            let joinStarted = clock.now
            let session = try await node.join(try Invitation(parsing: ticket.ticket), as: Whiteboard.self)
            log("\(name) joined in \(format(clock.now - joinStarted)) and sees \"\(session.activity.name)\"")
            sessions[name] = session
            let messenger = Messenger(session: session)
            messengers[name] = messenger
            let inbox = Inbox()
            inboxes[name] = inbox
            tasks.append(inbox.start(messenger, owner: name))
        }
        let benSession = sessions["ben"]!
        let cySession = sessions["cy"]!
        try await waitUntil("a full mesh of three") {
            [anaSession, benSession, cySession].allSatisfy { $0.activeParticipants.count == 3 }
        }
        log("full mesh: every member is connected to every other (3 participants each)")

        // Everyone says hello to everyone.
        try await anaMessenger.send(ChatLine(text: "welcome!"))
        try await messengers["ben"]!.send(ChatLine(text: "hi all"))
        try await messengers["cy"]!.send(ChatLine(text: "hello"))
        try await waitUntil("every hello") { inboxes.values.allSatisfy { $0.all.count == 2 } }
        for name in ["ana", "ben", "cy"] { for line in inboxes[name]!.all { log("  \(line)") } }

        // Ana shares a picture through the journal; ben and cy fetch it from her (and from each other).
        var random = SystemRandomGenerator()
        let picture = Data(random.bytes(count: Self.attachmentSize))
        let shareStarted = clock.now
        let shared = try await Journal(session: anaSession).add(picture, metadata: BoardState(strokes: ["sketch.png"]))
        let digest = try await shared.digest()
        log("ana shared sketch.png (\(Self.attachmentSize / 1_048_576) MiB, BLAKE2b \(digest.prefix(16))...)")
        for session in [benSession, cySession] {
            let attachment = try await firstAttachment(of: session)
            guard try await attachment.digest() == digest else { throw CLIError("demo: the attachment differs") }
        }
        log("ben and cy verified every chunk against ana's signed Merkle root in \(format(clock.now - shareStarted))")

        // Ana leaves; Ben and Cy carry on without her.
        board.append("square by ana")
        let leaveStarted = clock.now
        await anaSession.leave()
        try await waitUntil("ana's departure") {
            [benSession, cySession].allSatisfy { $0.activeParticipants.map(\.name).sorted() == ["ben", "cy"] }
        }
        log("ana left; ben and cy saw it after \(format(clock.now - leaveStarted)) and the session goes on")
        try await messengers["ben"]!.send(ChatLine(text: "still here?"))
        try await messengers["cy"]!.send(ChatLine(text: "yes, carry on"))
        try await waitUntil("chat without the host") {
            inboxes["ben"]!.all.count == 3 && inboxes["cy"]!.all.count == 3
        }
        log("  \(inboxes["cy"]!.all.last!)")
        log("  \(inboxes["ben"]!.all.last!)")

        // Ben invites Dee; his ticket names Ben and Cy (not Ana, who left). Ben catches Dee up when she appears.
        let benTicket = try await benSession.makeInvitation(validFor: .seconds(600))
        let benMessenger = messengers["ben"]!
        let catchUp = Task { [board] in
            for await change in benSession.participantChanges {
                if case .joined(let newcomer) = change, newcomer.name == "dee" {
                    try await benMessenger.send(BoardState(strokes: board), to: .only([newcomer]))
                    return newcomer.name
                }
            }
            return ""
        }
        let lateStarted = clock.now
        let deeSession = try await dee.join(try Invitation(parsing: benTicket.ticket), as: Whiteboard.self)
        log("dee joined late in \(format(clock.now - lateStarted)) through ben's ticket")
        let deeMessenger = Messenger(session: deeSession)
        var caughtUp: BoardState?
        for await (state, context) in deeMessenger.messages(of: BoardState.self) {
            log("dee was caught up by \(context.source.name): \(state.strokes.count) strokes \(state.strokes)")
            caughtUp = state
            break
        }
        _ = try await catchUp.value
        try await waitUntil("dee in a full mesh") {
            [benSession, cySession, deeSession].allSatisfy { $0.activeParticipants.count == 3 }
        }
        log("dee sees \(deeSession.activeParticipants.map(\.name).sorted())")
        guard caughtUp?.strokes == board else { throw CLIError("demo: dee's catch-up state is wrong") }

        // Ana is gone, but her attachment is not: dee fetches it from ben and cy, who both hold it.
        let fetchStarted = clock.now
        let atDee = try await firstAttachment(of: deeSession)
        let deeDigest = try await atDee.digest()
        let seconds =
            Double((clock.now - fetchStarted).components.attoseconds) / 1e18
            + Double((clock.now - fetchStarted).components.seconds)
        guard deeDigest == digest else { throw CLIError("demo: dee's copy of the attachment differs") }
        log(
            "dee received sketch.png from ben and cy after its author left: \(format(clock.now - fetchStarted)), "
                + String(format: "%.0f MB/s", Double(Self.attachmentSize) / seconds / 1e6) + ", identical digest")

        for task in tasks { task.cancel() }
        let figures = try await benSession.peerStatistics()
        for figure in figures.sorted(by: { $0.participant.name < $1.participant.name }) {
            log("ben -> \(figure.participant.name): rtt \(format(figure.smoothedRTT)), \(figure.packetsSent) packets")
        }
        try await benSession.end()
        try await waitUntil("the end") { cySession.state != .joined && deeSession.state != .joined }
        log("ben ended the session for everyone: cy is \(cySession.state), dee is \(deeSession.state)")
        print("\nEverything above ran over real UDP sockets with end-to-end encryption. Next:")
        print("  make install                 # put huddle on the PATH (make install PREFIX=$HOME/.local: no root)")
        print("  huddle host --name ana       # start a chat session and print its ticket")
        print("  huddle join TICKET --name ben  # join it from another terminal")
    }

    /// The first attachment of `session`'s journal, once every byte is verified.
    private func firstAttachment(of session: GroupSession<Whiteboard>) async throws -> Journal.Attachment {
        let journal = Journal(session: session)
        try await waitUntil("an attachment", seconds: 60) { !journal.attachments.isEmpty }
        let attachment = journal.attachments[0]
        for await progress in attachment.progressUpdates where progress.isFinal {
            guard case .complete = progress.status else { throw CLIError("demo: \(progress)") }
        }
        return attachment
    }

    private func format(_ duration: Duration) -> String {
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        return String(format: "%.1f ms", milliseconds)
    }
}
