import ArgumentParser
import Huddle

/// `huddle join TICKET`: joins a session.
struct JoinCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Join a chat session with a ticket.",
        discussion: """
            Contacts the members the ticket names and joins through the first that answers (30 s at most). Then \
            works like `huddle host`: standard input takes chat lines and /invite, /peers, /leave, /end.
            """
    )

    @Argument(help: "The ticket (starts with huddle:).")
    var ticket: String

    @OptionGroup var options: NodeOptions

    func run() async throws {
        Signals.install()
        let output = EventOutput(json: options.json)
        let invitation: Invitation
        do {
            invitation = try Invitation(parsing: ticket)
        } catch {
            output.error(code: "bad-ticket", "\(error)")
            throw ExitCode(2)
        }
        guard !invitation.isExpired() else {
            output.error(code: "ticket-expired", "\(HuddleError.invitationExpired(invitation.expiresAt))")
            throw ExitCode(2)
        }
        let node: HuddleNode
        do {
            node = try await options.startNode()
        } catch {
            output.error(code: "start-failed", "\(error)")
            throw ExitCode(1)
        }
        let session: GroupSession<ChatActivity>
        do {
            session = try await node.join(invitation, as: ChatActivity.self)
        } catch {
            let code: String =
                switch error {
                case HuddleError.joinTimedOut: "join-timeout"
                case HuddleError.activityMismatch: "not-a-chat"
                default: "join-failed"
                }
            output.error(code: code, "\(error)")
            await node.shutdown()
            throw ExitCode(3)
        }
        let status = await ChatRunner(node: node, session: session, output: output, stay: options.stay).run()
        throw ExitCode(status)
    }
}
