/// The anti-replay filter for one receive key: a sliding bitmap of the last ``width`` packet numbers, in the style
/// of RFC 6479 (a ring of 64-bit blocks, so advancing the window clears whole blocks instead of shifting bits).
///
/// Use it in two steps so forged packets cannot move the window: ``wouldAccept(_:)`` is a read-only pre-check
/// before decryption (drops duplicates and numbers that are too old, for free), and ``accept(_:)`` records the
/// number only after the packet authenticated. Packet numbers at or above ``limit`` are always refused, so a key is
/// never used past its nonce budget.
public struct ReplayWindow: Sendable {
    /// How many packet numbers behind the highest accepted one are still accepted: 127 blocks of 64 bits. Deep
    /// enough for bulk transfers that reorder thousands of packets.
    public static let width: UInt64 = UInt64(blockCount - 1) * UInt64(bitsPerBlock)

    /// Packet numbers at or above this are refused (a key must be replaced before then).
    public let limit: UInt64

    private static let bitsPerBlock = 64
    private static let blockCount = 128
    private static let blockMask = UInt64(blockCount - 1)

    private var blocks: [UInt64]
    private var highest: UInt64 = 0

    /// A fresh window that has accepted nothing. `limit` bounds accepted packet numbers (exclusive).
    public init(limit: UInt64 = ProtocolLimits.rejectAfterPackets) {
        self.limit = limit
        blocks = [UInt64](repeating: 0, count: Self.blockCount)
    }

    /// Whether `packetNumber` would be accepted now. Does not change the window; call before decrypting.
    public func wouldAccept(_ packetNumber: UInt64) -> Bool {
        guard packetNumber < limit else { return false }
        if packetNumber > highest { return true }
        guard highest - packetNumber <= Self.width else { return false }
        return !isMarked(packetNumber)
    }

    /// Records `packetNumber` as received and returns `true`, or returns `false` (changing nothing) if it is a
    /// duplicate, too old, or at or above ``limit``. Call only after the packet authenticated.
    public mutating func accept(_ packetNumber: UInt64) -> Bool {
        guard packetNumber < limit else { return false }
        let block = packetNumber >> 6
        if packetNumber > highest {
            let currentBlock = highest >> 6
            let advance = min(block - currentBlock, UInt64(Self.blockCount))
            var step: UInt64 = 1
            while step <= advance {
                blocks[Int((currentBlock + step) & Self.blockMask)] = 0
                step += 1
            }
            highest = packetNumber
        } else if highest - packetNumber > Self.width {
            return false
        }
        let index = Int(block & Self.blockMask)
        let bit = UInt64(1) << (packetNumber & 63)
        guard blocks[index] & bit == 0 else { return false }
        blocks[index] |= bit
        return true
    }

    /// The highest packet number accepted so far (0 before any).
    public var highestAccepted: UInt64 { highest }

    private func isMarked(_ packetNumber: UInt64) -> Bool {
        let index = Int((packetNumber >> 6) & Self.blockMask)
        return blocks[index] & (UInt64(1) << (packetNumber & 63)) != 0
    }
}
