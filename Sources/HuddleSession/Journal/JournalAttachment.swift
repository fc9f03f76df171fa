import HuddleCrypto
import HuddleProtocol

/// One attachment as a ``JournalState`` tracks it: the manifest, what this node holds, what each holder holds, and
/// the download's requests. Everything is bounded by the chunk count (at most 1,600).
struct JournalAttachment: Sendable {
    enum Status: Sendable, Equatable {
        /// Waiting for a download slot.
        case queued
        /// Fetching and checking the leaf list.
        case fetchingLeaves
        /// Waiting for the store to report what it already holds.
        case scanning
        /// Fetching chunks.
        case fetching
        /// Every chunk verified and stored.
        case complete
        /// Stopped by a store failure.
        case failed
    }

    struct Request: Sendable {
        var peer: X25519PublicKey
        var deadline: Instant
    }

    /// A leaf-list download from one holder: every piece is asked at once, the list is checked when all arrived.
    struct LeavesFetch: Sendable {
        var peer: X25519PublicKey
        var deadline: Instant
        var buffer: [UInt8]
        var received: Set<Int>
    }

    let manifest: AttachmentManifest
    var status: Status
    /// The verified leaf list (flat, 32 bytes per chunk), once known.
    var leaves: [UInt8]?
    /// Chunks this node holds, verified (allocated with the leaf list).
    var held: ChunkBitmap
    /// Peers that hold the leaf list, with the chunks they hold.
    var holders: [X25519PublicKey: ChunkBitmap] = [:]
    /// Per chunk, the holders (not avoided) that have it: rarest first.
    var availability: [UInt16]
    /// Bad chunks (or a bad leaf list) each holder sent for this attachment.
    var strikes: [X25519PublicKey: Int] = [:]
    /// Outstanding chunk requests by index.
    var requests: [Int: Request] = [:]
    /// Holders that failed a chunk (bad, missing, timed out): asked for it again only if nobody else has it.
    var refusedBy: [Int: Set<X25519PublicKey>] = [:]
    var leavesFetch: LeavesFetch?
    /// Holders whose leaf list did not match the root: never asked for it again.
    var badLeavesFrom: Set<X25519PublicKey> = []
    /// Holders whose leaf-list request timed out, the longest ago first: asked again only when every other holder
    /// was, and then the one that timed out longest ago. A timeout is not a verdict (the request may have gone out
    /// on a connection that was being replaced, or the holder was frozen for a while), so it must not rule the
    /// holder out for good: once every holder had timed out once, the download asked nobody and had no timer left.
    var leavesTimedOut: [X25519PublicKey] = []
    /// Verified chunks not yet advertised with HAVE, and when they must be.
    var pendingHave: [Int] = []
    var haveDeadline: Instant?
    /// When the download last verified a chunk (or started), for the stall rule.
    var lastProgress = Instant.zero

    init(manifest: AttachmentManifest, status: Status) {
        self.manifest = manifest
        self.status = status
        held = ChunkBitmap(count: manifest.chunkCount)
        availability = Array(repeating: 0, count: manifest.chunkCount)
    }

    var chunkCount: Int { manifest.chunkCount }

    /// Whether `peer` may be asked for chunks of this attachment.
    func isTrusted(_ peer: X25519PublicKey) -> Bool {
        (strikes[peer] ?? 0) < ProtocolLimits.maxBadChunksPerHolder
    }

    /// The verified bytes held.
    var verifiedBytes: UInt64 {
        guard held.setCount > 0 else { return 0 }
        let full = UInt64(held.setCount) * UInt64(MerkleTree.chunkSize)
        // Only the last chunk may be short.
        let last = chunkCount - 1
        return held.contains(last) ? full - UInt64(MerkleTree.chunkSize - chunkLength(last)) : full
    }

    func chunkLength(_ index: Int) -> Int { MerkleTree.chunkLength(index: index, size: manifest.size) }

    /// The leaf hash of chunk `index` (leaves must be known).
    func leaf(_ index: Int) -> ArraySlice<UInt8> {
        leaves![(index * MerkleTree.hashLength)..<((index + 1) * MerkleTree.hashLength)]
    }

    /// Whether `bytes` is chunk `index`: the right length and the right leaf hash.
    func verify(_ bytes: [UInt8], index: Int) -> Bool {
        verifier?.verify(bytes, index: index) ?? false
    }

    /// What checks this attachment's chunks, once the leaf list is known.
    var verifier: ChunkVerifier? {
        leaves.map { ChunkVerifier(leaves: $0, size: manifest.size) }
    }

    /// Adds `peer`'s chunks to the availability counts (or removes them with `sign` -1).
    mutating func count(_ peer: X25519PublicKey, sign: Int) {
        guard let bitmap = holders[peer], isTrusted(peer) else { return }
        for index in bitmap.indices {
            availability[index] = UInt16(clamping: Int(availability[index]) + sign)
        }
    }
}
