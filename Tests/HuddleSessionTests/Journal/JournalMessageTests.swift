import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@Suite("Journal messages")
struct JournalMessageTests {
    static let id = JournalFixtures.id(7)

    @Test("Every message type round-trips byte for byte; chunks go on the bulk channel, the rest on control")
    func roundTrip() throws {
        let manifest = try JournalFixtures.manifest(JournalFixtures.data(100), id: Self.id, metadata: [1, 2])
        let messages: [JournalMessage] = [
            .announce(manifest),
            .have(Self.id, ranges: [0..<3, 5..<6, 1_599..<1_600]),
            .have(Self.id, ranges: []),
            .leavesRequest(Self.id, first: 512, count: 512),
            .leaves(Self.id, first: 0, hashes: [UInt8](repeating: 3, count: 64)),
            .chunkRequest(Self.id, index: 1_599),
            .chunk(Self.id, index: 3, bytes: [UInt8](repeating: 9, count: MerkleTree.chunkSize)),
            .chunk(Self.id, index: 0, bytes: []),
            .chunkMissing(Self.id, index: 4),
            .remove(Self.id),
        ]
        for message in messages {
            let bytes = message.encoded()
            #expect(try JournalMessage(decoding: bytes) == message)
            #expect(bytes.count <= ProtocolLimits.maxJournalMessageBytes)
        }
        #expect(messages[6].channel == JournalMessage.bulkChannel)
        #expect(messages[0].channel == JournalMessage.controlChannel)
        #expect(JournalMessage.controlChannel.rawValue < 16 && JournalMessage.bulkChannel.rawValue >= 128)
    }

    @Test("Unknown types are skipped; truncation, trailing bytes and empty input are malformed")
    func unknownAndDamaged() throws {
        #expect(try JournalMessage(decoding: [0x55, 1, 2]) == .unknown(type: 0x55))
        #expect(throws: JournalError.self) { try JournalMessage(decoding: []) }
        let bytes = JournalMessage.chunk(Self.id, index: 2, bytes: [1, 2, 3]).encoded()
        for cut in 1..<bytes.count {
            #expect(throws: JournalError.self) { try JournalMessage(decoding: Array(bytes.prefix(cut))) }
        }
        #expect(throws: JournalError.self) { try JournalMessage(decoding: bytes + [0]) }
    }

    @Test("Limits: a chunk of 65,536 bytes passes and 65,537 is refused; indices beyond 1,600 are refused")
    func chunkLimits() throws {
        var over = JournalMessage.chunk(Self.id, index: 0, bytes: [UInt8](repeating: 1, count: 65_535)).encoded()
        // Rewrite the length varint (2 bytes after the 16-byte id and the 1-byte index) to 65,537 (4-byte varint).
        over.replaceSubrange(18..<22, with: [0x80, 0x01, 0x00, 0x01])
        over += [1, 1]
        #expect(throws: JournalError.self) { try JournalMessage(decoding: over) }
        #expect(throws: JournalError.self) {
            try JournalMessage(decoding: JournalMessage.chunkRequest(Self.id, index: 1_601).encoded())
        }
        _ = try JournalMessage(decoding: JournalMessage.chunkRequest(Self.id, index: 1_600).encoded())
        #expect(throws: JournalError.self) {
            try JournalMessage(decoding: [UInt8](repeating: 6, count: ProtocolLimits.maxJournalMessageBytes + 1))
        }
    }

    @Test("Limits: HAVE with 1,600 ranges passes, 1,601 is refused before reading; LEAVES counts 1...512")
    func countLimits() throws {
        let ranges = (0..<1_600).map { $0..<($0 + 1) }
        let atLimit = JournalMessage.have(Self.id, ranges: ranges)
        #expect(try JournalMessage(decoding: atLimit.encoded()) == atLimit)
        // A HAVE that claims 1,601 ranges (varint 0x4641) and carries none.
        #expect(throws: JournalError.limitExceeded(what: "HAVE ranges", limit: 1_600)) {
            try JournalMessage(decoding: [2] + Self.id.bytes + [0x46, 0x41])
        }
        #expect(throws: JournalError.self) { try JournalMessage(decoding: [2] + Self.id.bytes + [1, 0, 0]) }
        #expect(throws: JournalError.self) {
            try JournalMessage(decoding: JournalMessage.leavesRequest(Self.id, first: 0, count: 513).encoded())
        }
        #expect(throws: JournalError.self) {
            try JournalMessage(decoding: JournalMessage.leavesRequest(Self.id, first: 0, count: 0).encoded())
        }
        // LEAVES claiming 512 hashes with fewer bytes is truncated, not an allocation of the claim.
        #expect(throws: JournalError.self) { try JournalMessage(decoding: [4] + Self.id.bytes + [0, 0x42, 0x00]) }
    }

    @Test("Hostile bytes never crash the decoder", arguments: 0..<4)
    func fuzz(seed: UInt64) {
        var random = ChaChaRandomGenerator(seed: seed)
        let valid = JournalMessage.have(Self.id, ranges: [0..<2, 4..<9]).encoded()
        for round in 0..<2_000 {
            var bytes = round % 2 == 0 ? valid : random.bytes(count: Int(random.next() % 64))
            if !bytes.isEmpty, round % 2 == 0 {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            if round % 4 == 1, !bytes.isEmpty { bytes[0] = UInt8(1 + random.next() % 8) }
            _ = try? JournalMessage(decoding: bytes)
        }
    }
}
