import Foundation
import HuddleCrypto
import HuddleProtocol
import Testing

@testable import Huddle

/// Local network announcements without a network: the beacon's format and limits, and what a node that cannot
/// announce is told. (Announcing, discovering and joining across machines: NetworkNamespaceTests/LocalDiscoveryTests,
/// which keeps multicast inside network namespaces.)
@Suite("Local network announcements")
struct NearbyTests {
    static let ticket = "huddle:" + String(repeating: "A", count: 200)

    @Test("A beacon round-trips; its layout is magic, version, name, big-endian ticket length, ticket")
    func layout() throws {
        let beacon = NearbyBeacon(name: "Ana's canvas", ticket: Self.ticket)
        let bytes = beacon.encoded()
        #expect(Array(bytes.prefix(6)) == Array("HLAN".utf8) + [1, 12])
        #expect(Array(bytes[18..<20]) == [0, UInt8(Self.ticket.utf8.count)])
        #expect(bytes.count == 6 + 12 + 2 + Self.ticket.utf8.count)
        #expect(NearbyBeacon(decoding: bytes) == beacon)
    }

    @Test("Anything but exactly one well-formed beacon is ignored")
    func malformed() {
        let bytes = NearbyBeacon(name: "x", ticket: Self.ticket).encoded()
        #expect(NearbyBeacon(decoding: bytes + [0]) == nil, "trailing byte")
        #expect(NearbyBeacon(decoding: bytes.dropLast()) == nil, "truncated")
        var version = bytes
        version[4] = 2
        #expect(NearbyBeacon(decoding: version) == nil, "another version")
        var magic = bytes
        magic[0] = 0
        #expect(NearbyBeacon(decoding: magic) == nil, "another magic")
        var name = bytes
        name[6] = 0xff
        #expect(NearbyBeacon(decoding: name) == nil, "a name that is not UTF-8")
        #expect(NearbyBeacon(decoding: [UInt8]()) == nil)
    }

    @Test("Names are cut to 64 bytes at a character; a 65-byte name length or a 1025-byte ticket is refused")
    func limits() {
        let long = String(repeating: "é", count: 40)  // 80 bytes
        let cut = NearbyBeacon(name: long, ticket: Self.ticket).encoded()
        let decoded = NearbyBeacon(decoding: cut)
        #expect(decoded?.name == String(repeating: "é", count: 32))
        var oversizedName = Array("HLAN".utf8) + [1, 65] + [UInt8](repeating: 0x61, count: 65) + [0, 1, 0x61]
        #expect(NearbyBeacon(decoding: oversizedName) == nil)
        oversizedName = Array("HLAN".utf8) + [1, 1, 0x61, 0x04, 0x01] + [UInt8](repeating: 0x61, count: 1025)
        #expect(NearbyBeacon(decoding: oversizedName) == nil)
        let atLimit = Array("HLAN".utf8) + [1, 1, 0x61, 0x04, 0x00] + [UInt8](repeating: 0x61, count: 1024)
        #expect(NearbyBeacon(decoding: atLimit)?.ticket.utf8.count == 1024)
    }

    @Test("A node on loopback cannot announce, and is told why")
    func loopbackCannotAnnounce() async throws {
        var random = ChaChaRandomGenerator(seed: 81)
        let node = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "lo"))
        defer { Task { await node.shutdown() } }
        let session = try await node.activate(DrawTogether(canvas: "nearby"))
        try await session.join()
        do {
            _ = try await session.announceNearby(as: "lo")
            Issue.record("a node on loopback announced")
        } catch .localNetwork(.listensWhereBeaconsCannotReach(let address)) {
            #expect(address == "127.0.0.1")
            #expect(
                HuddleError.localNetwork(.listensWhereBeaconsCannotReach(address: address)).description
                    .contains("0.0.0.0"))
        } catch {
            Issue.record("\(error)")
        }
    }
}
