import Foundation
@_spi(Testing) import Huddle
import HuddleCLITestSupport
import HuddleCrypto
import Testing

/// Issue 40: `huddle join` against a member of another protocol revision (a node in this process playing `huddle/2`)
/// ends at once with `protocol-mismatch` naming both revisions, instead of waiting 30 s for an answer.
@Suite("huddle join refused by another protocol revision")
struct ProtocolRefusalProcessTests {
    struct Sketch: GroupActivity {
        static let activityIdentifier = "org.huddle.chat"
        var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "a huddle/2 session") }
    }

    @Test("huddle join exits 3 with protocol-mismatch naming huddle/1 and huddle/2", .timeLimit(.minutes(1)))
    func joinRefused() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        var random = ChaChaRandomGenerator(seed: 40)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "newer")
        configuration.protocolVersion = "huddle/2"
        let node = try await HuddleNode.start(configuration)
        let session = try await node.activate(Sketch())
        try await session.join()
        let ticket = try await session.makeInvitation(validFor: .seconds(60)).ticket

        let joiner = try cluster.join(ticket, as: "ada")
        // Far below the 30 s join timeout: the member's refusal answers the first initiation.
        #expect(try await joiner.waitForExit(within: 10) == 3)
        let error = try #require(joiner.events.first { $0.name == "error" })
        #expect(error["code"] == "protocol-mismatch")
        let message = error["message"] ?? ""
        #expect(message.contains("huddle/1") && message.contains("huddle/2"), "\(message)")
        #expect(!joiner.events.contains { $0.name == "joined" })
        #expect(session.activeParticipants.count == 1)
        await node.shutdown()
    }
}
