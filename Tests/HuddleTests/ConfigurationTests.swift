import HuddleCrypto
import Testing

@testable import Huddle

/// ``HuddleNode/Configuration`` keeps each setting in one place (issue 35: `host`/`port` and `transport.host/port`
/// were two copies, and `start` overwrote one with the other).
@Suite("Node configuration", .serialized)
struct ConfigurationTests {
    @Test("host/port and transport.host/port are one setting; start binds what either names")
    func oneAddress() async throws {
        var random = ChaChaRandomGenerator(seed: 3701)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "one")
        configuration.port = 4_321
        #expect(configuration.transport.port == 4_321)
        configuration.transport.host = "127.0.0.2"
        #expect(configuration.host == "127.0.0.2")

        // A port found free, then set only through the transport settings: the node binds it.
        let probe = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "probe"))
        let port = probe.localAddress.port
        await probe.shutdown()
        configuration.transport.host = "127.0.0.1"
        configuration.transport.port = Int(port)
        let node = try await HuddleNode.start(configuration)
        #expect(node.localAddress.port == port)
        await node.shutdown()
    }

    @Test("Sharing a TURN server whose credentials do not fit in a ticket is refused at start with a typed error")
    func sharedTurnCredentialsTooLong() async throws {
        var random = ChaChaRandomGenerator(seed: 3703)
        let server = NetworkAddress(ipv4: 192, 0, 2, 10, port: 3478)
        var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "sharing")
        configuration.turnServers = [
            TurnServer(
                address: server,
                credentials: TurnCredentials(
                    username: "ada", password: String(repeating: "p", count: Invitation.maxTurnCredentialBytes + 1)))
        ]
        configuration.shareTurnServers = true
        do {
            let node = try await HuddleNode.start(configuration)
            await node.shutdown()
            Issue.record("credentials longer than a ticket carries were shared")
        } catch .turnCredentialsTooLong(let refused, let limit) {
            #expect(refused == server && limit == Invitation.maxTurnCredentialBytes)
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("A keepalive interval outside 100 ms ... 5 s is refused with a typed error; the bounds themselves start")
    func keepaliveBounds() async throws {
        var random = ChaChaRandomGenerator(seed: 3702)
        for interval in [Duration.milliseconds(99), .seconds(5) + .milliseconds(1), .zero] {
            var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "refused")
            configuration.keepaliveInterval = interval
            do {
                let node = try await HuddleNode.start(configuration)
                await node.shutdown()
                Issue.record("a keepalive every \(interval) was accepted")
            } catch .keepaliveIntervalOutOfRange(let refused) {
                #expect(refused == interval)
                #expect("\(HuddleError.keepaliveIntervalOutOfRange(refused))".contains("between 100 ms and 5 s"))
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        for interval in [HuddleNode.keepaliveIntervals.lowerBound, HuddleNode.keepaliveIntervals.upperBound] {
            var configuration = HuddleNode.Configuration(identity: Identity(using: &random), name: "bound")
            configuration.keepaliveInterval = interval
            let node = try await HuddleNode.start(configuration)
            await node.shutdown()
        }
    }
}
