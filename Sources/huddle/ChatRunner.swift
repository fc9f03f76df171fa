import Dispatch
import Foundation
import Huddle

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Runs a joined chat session: prints participant changes, messages and attachments, and reads commands from
/// standard input (plain text is a chat message to everyone; `/invite`, `/peers`, `/share PATH`, `/ls`,
/// `/get ID PATH`, `/rm ID`, `/remove NAME`, `/revoke TICKET`, `/admit NAME`, `/deny NAME`, `/leave`, `/end`,
/// `/help`).
///
/// Exit status: 0 when the run ends by leaving, ending or the session's end; ``removedExitStatus`` (4) when a member
/// removed this node.
struct ChatRunner {
    /// What standard input takes, for `huddle help host` / `help join`.
    static let commandHelp = """
        Standard input takes one command per line:
          TEXT          a chat message to everyone
          /invite       print a fresh ticket (any member can invite; it names every current member)
          /invite ask   print an ask-to-join ticket: each joiner waits until a member admits it
          /invite once  print a single-use ticket (it names only this node; `/invite ask once` combines both)
          /admit NAME   let in someone asking to join (name or id prefix; any member may answer)
          /deny NAME    turn away someone asking to join
          /peers        list the other participants with round-trip time and loss
          /share PATH   share a file (up to 100 MiB) with everyone, late joiners too; prints its id
          /ls           list attachments: id, name, size, holders, progress
          /get ID PATH  save an attachment once complete (any unique prefix of the id works)
          /rm ID        remove an attachment for everyone
          /remove NAME  remove a participant for everyone (name or id prefix; by default only the session's
                        creator may); it cannot come back with any ticket it saw
          /revoke TICKET
                        take a ticket back for everyone (any member's): nobody joins with it any more
          /leave        leave (the session goes on without this node); confirmed by `left`
          /end          end the session for everyone
          /help         list these commands
        At the end of input the node leaves, unless --stay is given. SIGINT or SIGTERM (Ctrl-C) leaves too, also \
        while joining; a second one exits at once.
        """

    let node: HuddleNode
    let session: GroupSession<ChatActivity>
    let output: EventOutput
    let stay: Bool

    /// The exit status when a member removed this node.
    static let removedExitStatus: Int32 = 4

    /// How the run ended.
    enum Outcome: Sendable {
        case leave
        case ended
        case sessionOver(String)
        case removed(by: Participant?)
    }

    /// Runs until the person leaves, the input ends (unless `--stay`), a signal arrives, or the session ends.
    /// Returns the process exit status.
    func run() async -> Int32 {
        let messenger = Messenger(session: session)
        let attachments = AttachmentShell(
            journal: Journal(session: session), output: output, localParticipant: session.localParticipant.id)
        // Subscribed before anything is printed or sent, so no change or failure falls between the roster printed
        // with `joined` and the streams (a change seen twice is harmless; one missed is not).
        let changes = session.participantChanges
        let paths = session.pathChanges
        let failures = session.deliveryFailures
        let drops = session.messageDrops
        let requests = session.joinRequests
        output.joined(session, present: session.activeParticipants.filter { $0 != session.localParticipant })
        // Outside the group: reports made while leaving (messages still unconfirmed then) are printed too; the
        // stream ends when the session is over.
        let reporter = Task {
            for await failure in failures { output.undelivered(failure) }
        }
        let dropReporter = Task {
            for await drop in drops { output.dropped(drop) }
        }
        // Outside the group too, so leaving does not cancel it: a line whose sender already has it confirmed (this
        // node's transport acknowledged it) must be printed, also while this node leaves. The stream ends when the
        // session is over, after the lines already received.
        let printer = Task {
            for await (line, context) in messenger.messages(of: ChatLine.self) {
                output.message(line.text, from: context.source)
            }
        }
        let outcome = await withTaskGroup(of: Outcome?.self) { group -> Outcome in
            group.addTask {
                for await change in changes { output.change(change) }
                return nil
            }
            group.addTask {
                for await change in paths { output.pathChanged(change) }
                return nil
            }

            group.addTask {
                await attachments.follow()
                return nil
            }
            group.addTask {
                await followJoinRequests(requests)
                return nil
            }
            group.addTask { [node] in
                // Changes only (and a start without a usable path): the session itself keeps running either way.
                var previous: Bool?
                for await eligible in GroupStateObserver(node: node).eligibilityUpdates {
                    if previous.map({ $0 != eligible }) ?? !eligible { output.eligibility(eligible) }
                    previous = eligible
                }
                return nil
            }
            group.addTask {
                for await state in session.stateUpdates {
                    if case .invalidated(.removed(let by)) = state { return .removed(by: by) }
                    if case .invalidated(let reason) = state { return .sessionOver("\(reason)") }
                }
                return nil
            }
            group.addTask { await readCommands(messenger: messenger, attachments: attachments) }
            group.addTask { await Signals.first() == nil ? nil : .leave }
            var outcome: Outcome = .leave
            for await result in group {
                if let result {
                    outcome = result
                    break
                }
            }
            group.cancelAll()
            return outcome
        }
        switch outcome {
        case .leave:
            await session.leave()
            await printer.value
            output.emit(
                "left", ["session": .string(session.id.description)],
                text: "left the session (the others go on without you)")
        case .ended:
            break
        case .sessionOver(let reason):
            output.emit("session-over", ["reason": .string(reason)], text: "session over: \(reason)")
        case .removed(let by):
            output.emit(
                "removed", ["by": by.map { .string($0.id) } ?? .null, "by_name": by.map { .string($0.name) } ?? .null],
                text: "removed from the session" + (by.map { " by \($0)" } ?? ""))
        }
        await node.shutdown()
        await printer.value
        await reporter.value
        await dropReporter.value
        if case .removed = outcome { return Self.removedExitStatus }
        return 0
    }

    private func readCommands(messenger: Messenger, attachments: AttachmentShell) async -> Outcome? {
        for await line in StandardInput.lines() {
            let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !text.isEmpty else { continue }
            if text.hasPrefix("/"), await attachments.handle(text) { continue }
            switch text {
            case "/leave":
                return .leave
            case "/end":
                do {
                    try await session.end()
                    output.emit("ended", [:], text: "ended the session for everyone")
                    return .ended
                } catch {
                    output.error(code: "end-failed", "\(error)")
                }
            case "/invite", "/invite ask", "/invite once", "/invite ask once":
                do {
                    let ask = text.contains(" ask")
                    let uses = text.hasSuffix(" once") ? 1 : nil
                    output.ticket(
                        try await session.makeInvitation(requiresApproval: ask, uses: uses), askToJoin: ask,
                        uses: uses)
                } catch {
                    output.error(code: "invite-failed", "\(error)")
                }
            case let command where command.hasPrefix("/admit "):
                await answer(
                    String(command.dropFirst("/admit ".count)).trimmingCharacters(in: .whitespaces), admit: true)
            case let command where command.hasPrefix("/deny "):
                await answer(
                    String(command.dropFirst("/deny ".count)).trimmingCharacters(in: .whitespaces), admit: false)
            case "/peers":
                await printPeers()
            case let command where command.hasPrefix("/remove "):
                await remove(String(command.dropFirst("/remove ".count)).trimmingCharacters(in: .whitespaces))
            case let command where command.hasPrefix("/revoke "):
                await revoke(String(command.dropFirst("/revoke ".count)))
            case "/help":
                output.emit(
                    "help", ["text": .string(Self.commandHelp)],
                    text: Self.commandHelp.trimmingCharacters(in: .newlines))
            default:
                if text.hasPrefix("/") {
                    output.error(
                        code: "unknown-command",
                        "unknown command \(text); /help lists them: /invite, /peers, /share, /ls, /get, /rm, /remove, "
                            + "/revoke, /admit, /deny, /leave, /end")
                    continue
                }
                do {
                    try await messenger.send(ChatLine(text: text))
                } catch {
                    output.error(code: "send-failed", "\(error)")
                }
            }
        }
        // End of input: leave, unless told to stay (then a signal or the session's end finishes the run).
        return stay ? nil : .leave
    }

    /// Removes the participant named `name` (its name, or a prefix of its id); the change stream then prints
    /// `participant-removed`.
    private func remove(_ name: String) async {
        let others = session.activeParticipants.filter { $0 != session.localParticipant }
        let byName = others.filter { $0.name == name }
        let matches = byName.isEmpty ? others.filter { !name.isEmpty && $0.id.hasPrefix(name.lowercased()) } : byName
        guard matches.count == 1, let participant = matches.first else {
            output.error(
                code: "remove-failed",
                matches.isEmpty
                    ? "no participant named \(name); /peers lists them"
                    : "\(matches.count) participants match \(name); give a longer id prefix")
            return
        }
        do {
            try await session.remove(participant)
        } catch {
            output.error(code: "remove-failed", "\(error)")
        }
    }

    /// Revokes the ticket `text` for everyone; prints `invitation-revoked` (its expiry, which tells tickets apart).
    private func revoke(_ text: String) async {
        do {
            let invitation = try Invitation(parsing: text)
            try await session.revoke(invitation)
            let expires = ISO8601DateFormatter().string(from: invitation.expiresAt)
            output.emit(
                "invitation-revoked", ["expires": .string(expires)],
                text: "revoked the ticket that expires at \(expires): nobody joins with it any more")
        } catch {
            output.error(code: "revoke-failed", "\(error)")
        }
    }

    private func printPeers() async {
        let figures = (try? await session.peerStatistics()) ?? []
        for figure in figures.sorted(by: { $0.participant.name < $1.participant.name }) {
            let rtt = EventOutput.milliseconds(figure.smoothedRTT)
            output.emit(
                "peer",
                [
                    "participant": .string(figure.participant.id), "name": .string(figure.participant.name),
                    "rtt_ms": .number(rtt), "loss": .number(figure.lossRate),
                    "packets_sent": .integer(figure.packetsSent), "packets_lost": .integer(figure.packetsLost),
                    "path": .string(figure.path.kind), "path_address": .string(figure.path.address.description),
                    "relay_member": figure.relayingMember.map { .string($0.id) } ?? .null,
                    "datagram_size": .integer(figure.datagramSize),
                ],
                text: "\(figure.participant)  \(figure.path)\(EventOutput.through(figure.relayingMember))  rtt "
                    + "\(String(format: "%.3f", rtt)) ms  loss "
                    + String(format: "%.2f", figure.lossRate * 100) + " % (\(figure.packetsLost)/\(figure.packetsSent))"
                    + "  datagrams \(figure.datagramSize) B"
            )
        }
        output.emit(
            "peers", ["count": .integer(figures.count)], text: "\(figures.count) other participant(s)")
    }
}

/// Standard input as lines, read on a dedicated thread so blocking reads never hold a concurrency thread.
enum StandardInput {
    static func lines() -> AsyncStream<String> {
        AsyncStream(bufferingPolicy: .unbounded) { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
        }
    }
}

extension PeerPath {
    /// `direct` or `relayed`, as `--json` prints it.
    var kind: String {
        if case .direct = self { return "direct" }
        return "relayed"
    }

    /// The participant's address, or the relay's.
    var address: NetworkAddress {
        switch self {
        case .direct(let address), .relayed(let address): return address
        }
    }
}
