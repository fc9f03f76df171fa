import HuddleCrypto
import HuddleSession
import Testing

@_spi(Testing) @testable import Huddle

/// Nodes of two protocol revisions (issue 40): a joiner and a member that speak different ones refuse each other at
/// once with a typed error naming both revisions, whichever side is the newer, instead of a 30 s join timeout.
@Suite("Joining across protocol revisions over loopback UDP", .serialized)
struct ProtocolRevisionTests {
    static let newer = "huddle/2"

    static func node(_ name: String, seed: UInt64, revision: String) async throws -> HuddleNode {
        var random = ChaChaRandomGenerator(seed: seed)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: name)
        configuration.protocolVersion = revision
        return try await HuddleNode.start(configuration)
    }

    @Test(
        "a join between revisions fails within seconds naming both, the host's session untouched",
        arguments: [
            (host: HuddleNode.protocolVersion, joiner: newer), (host: newer, joiner: HuddleNode.protocolVersion),
        ])
    func refusedEitherWay(revisions: (host: String, joiner: String)) async throws {
        let host = try await Self.node("host", seed: 41, revision: revisions.host)
        let joiner = try await Self.node("joiner", seed: 42, revision: revisions.joiner)
        let session = try await host.activate(DrawTogether(canvas: "revisions"))
        try await session.join()
        let invitation = try Invitation(parsing: try await session.makeInvitation(validFor: .seconds(60)).ticket)
        // Far below the 30 s join timeout: the refusal answers the first initiation.
        let outcome = try await withTimeout(10, "the join fails") { () -> HuddleError? in
            do {
                _ = try await joiner.join(invitation, as: DrawTogether.self)
                return nil
            } catch {
                return error as? HuddleError
            }
        }
        guard case .joinFailed(.incompatibleProtocol(let ours, let theirs)) = outcome else {
            Issue.record("expected a refusal naming both revisions, got \(String(describing: outcome))")
            await host.shutdown()
            await joiner.shutdown()
            return
        }
        #expect(ours == revisions.joiner)
        #expect(theirs == revisions.host)
        let message = "\(outcome!)"
        #expect(message.contains(revisions.host) && message.contains(revisions.joiner), "\(message)")
        #expect(session.state == .joined)
        #expect(session.activeParticipants.map(\.name) == ["host"])
        // What huddle_protocol_refusals_total reports: the host refused, the joiner was refused.
        let refused = try await host.driver.perform { endpoint, _ in endpoint.statistics.refusalsSent }
        let wasRefused = try await joiner.driver.perform { endpoint, _ in endpoint.statistics.refusalsAccepted }
        #expect(refused >= 1 && wasRefused == 1, "sent \(refused), received \(wasRefused)")
        await host.shutdown()
        await joiner.shutdown()
    }

    @Test("a refusal's revision is shown as printable text whatever bytes the peer put in it")
    func revisionNamesArePrintable() {
        #expect(JoinFailureCause.revisionName(Array("huddle/2".utf8)) == "huddle/2")
        #expect(JoinFailureCause.revisionName([0x68, 0x1B, 0x5B, 0x32, 0x4A, 0xFF, 0x0A]) == "h?[2J??")
    }
}
