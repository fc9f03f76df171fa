import ArgumentParser
import Huddle

/// `huddle join TICKET`: joins a session.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a chat session with a ticket.",
        discussion: """
            With --lan NAME, first listens for the session announced under NAME on the local network (`huddle \
            host --lan NAME`, `huddle discover`) and uses the ticket its announcement carries. \
            Contacts the members the ticket names and joins through the first that answers (30 s at most), then \
            works like `huddle host`. Exit status: 0 after a session, 1 when the node cannot start, 2 when the \
            ticket is unusable (damaged, expired, or made by this node's own identity), 3 when joining fails, \
            5 when a member denied an ask-to-join request, 128 + the signal when SIGINT or SIGTERM interrupts the \
            join (the node leaves first). With an ask-to-join ticket the join waits up to two more minutes for a \
            member's answer (a `waiting` event says so).

            Examples:
              huddle join huddle:... --name ben
              huddle join --lan "Ana's room" --name ben
              huddle join huddle:... --name ben --json --stay < /dev/null   # a scripted member

            """ + ChatRunner.commandHelp
    )

    /// The exit status when a member denied this node's ask-to-join request.
    static let deniedExitStatus: Int32 = 5

    @Argument(help: "The ticket (starts with huddle:); or use --lan.")
    var ticket: String?

    @Option(
        help: ArgumentHelp(
            "Join the session announced on the local network under this name (huddle discover lists them).",
            valueName: "name"))
    var lan: String?

    @Option(help: "How long --lan listens for the announcement, in seconds.")
    var lanTimeout: Double = 10

    func validate() throws {
        guard (ticket == nil) != (lan == nil) else { throw ValidationError("give either a ticket or --lan NAME") }
    }

    @OptionGroup var options: NodeOptions

    func run() async throws {
        Signals.install()
        let output = EventOutput(json: options.json)
        let invitation: Invitation
        if let lan {
            invitation = try await Self.announced(lan, within: lanTimeout, output: output)
        } else {
            do {
                invitation = try Invitation(parsing: ticket ?? "")
            } catch {
                output.error(code: "bad-ticket", "\(error)")
                throw ExitCode(2)
            }
        }
        guard !invitation.isExpired() else {
            output.error(code: "ticket-expired", "\(HuddleError.invitationExpired(invitation.expiresAt))")
            throw ExitCode(2)
        }
        let started: NodeOptions.Started
        do {
            started = try await options.startNode()
        } catch {
            output.startFailed(error)
            throw ExitCode(1)
        }
        let node = started.node
        if let server = started.metricsServer { output.metrics(server.localAddress) }
        StateReporter.start(node, output: output)
        // Joining waits up to 30 s for a member to answer; a signal meanwhile shuts the node down, which leaves the
        // session (announcing it to any member already reached) and makes the join throw.
        let interruption = Task { () -> Int32? in
            guard let signal = await Signals.first() else { return nil }
            // In a task of its own, so that a cancellation racing with the signal cannot cut the leave short.
            await Task { await node.shutdown() }.value
            return signal
        }
        let session: GroupSession<ChatActivity>
        output.waiting(
            for: "a member the ticket names to answer", seconds: Double(HuddleNode.joinTimeout.components.seconds))
        do {
            session = try await node.join(invitation, as: ChatActivity.self) {
                output.waiting(
                    for: "a member to answer the request to join",
                    seconds: Double(HuddleNode.joinApprovalTimeout.components.seconds))
            }
        } catch {
            if let signal = await Self.settle(interruption) {
                Self.reportInterruption(signal, output: output)
                throw ExitCode(128 + signal)
            }
            if case HuddleError.invitationNamesOnlyThisNode = error {
                // Said in the CLI's terms: which file, and the flag that fixes it.
                output.error(
                    code: "own-ticket",
                    "this ticket names only this node's own identity (\(started.identityPath)): a node cannot join "
                        + "itself; give the joiner an identity of its own with --identity PATH")
                await node.shutdown()
                throw ExitCode(2)
            }
            let code: String =
                switch error {
                case HuddleError.joinTimedOut: "join-timeout"
                case HuddleError.activityMismatch: "not-a-chat"
                case HuddleError.joinFailed(.denied): "join-denied"
                case HuddleError.joinFailed(.unanswered): "join-unanswered"
                case HuddleError.joinFailed(.incompatibleProtocol): "protocol-mismatch"
                default: "join-failed"
                }
            output.error(code: code, "\(error)")
            await node.shutdown()
            if case HuddleError.joinFailed(.denied) = error { throw ExitCode(Self.deniedExitStatus) }
            throw ExitCode(3)
        }
        if let signal = await Self.settle(interruption) {
            // The signal arrived as the join completed: the node has left already.
            Self.reportInterruption(signal, output: output)
            throw ExitCode(128 + signal)
        }
        let status = await ChatRunner(node: node, session: session, output: output, stay: options.stay).run()
        throw ExitCode(status)
    }

    /// The ticket of the session announced on the local network as `name` (`--lan`), reported as a `nearby` event;
    /// exit 2 when none is heard within `seconds` or the network cannot be listened to.
    static func announced(_ name: String, within seconds: Double, output: EventOutput) async throws -> Invitation {
        let nearby: NearbySession?
        output.waiting(for: "the session announced as \"\(name)\" on the local network", seconds: seconds)
        do {
            nearby = try await NearbyLookup.find(name, within: seconds)
        } catch {
            output.error(code: "discover-failed", "\(error)")
            throw ExitCode(2)
        }
        guard let nearby else {
            output.error(
                code: "lan-not-found",
                "no session announced as \"\(name)\" was heard on the local network within \(seconds) s "
                    + "(huddle discover lists what is announced)")
            throw ExitCode(2)
        }
        output.nearby(nearby)
        return nearby.invitation
    }

    /// The signal that interrupted the join, once the node has shut down; `nil` (and the watcher stopped) if none
    /// arrived.
    private static func settle(_ interruption: Task<Int32?, Never>) async -> Int32? {
        // Without a signal the watcher is cancelled (it returns nil); with one, it returns once the node has left.
        if Signals.received == nil { interruption.cancel() }
        return await interruption.value
    }

    private static func reportInterruption(_ signal: Int32, output: EventOutput) {
        output.emit(
            "interrupted", ["signal": .string(Signals.name(signal))],
            text: "interrupted by \(Signals.name(signal)) while joining; left the session")
    }
}
