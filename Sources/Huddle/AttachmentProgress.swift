/// How far this node's copy of an attachment is: bytes verified against the author's Merkle root, out of its size.
public struct AttachmentProgress: Sendable, CustomStringConvertible {
    /// Where the download stands.
    public enum Status: Sendable {
        /// Chunks are being fetched (or wait for a download slot or a holder).
        case fetching
        /// The download verified nothing for two minutes while others waited; it resumes when its turn comes.
        case paused
        /// Every byte is verified and stored: ``Journal/Attachment/load()`` and ``Journal/Attachment/save(to:)``
        /// return at once.
        case complete
        /// Storing failed (the reason says why, e.g. the disk is full); verified bytes are kept.
        case failed(HuddleError)
        /// The attachment was removed from the journal (by any member), or the session is over.
        case removed
    }

    /// Verified bytes stored on this node.
    public let verifiedBytes: Int
    /// The attachment's size in bytes (as ``Journal/Attachment/size``).
    public let size: Int
    /// Where the download stands.
    public let status: Status

    /// The progress of `verifiedBytes` out of `size`, as the journal core counts them (sizes are at most 100 MiB,
    /// so they fit an `Int` everywhere Swift runs).
    init(verifiedBytes: UInt64, size: UInt64, status: Status) {
        self.verifiedBytes = Int(clamping: verifiedBytes)
        self.size = Int(clamping: size)
        self.status = status
    }

    /// The verified fraction, 0...1 (1 for an empty attachment).
    public var fraction: Double { size == 0 ? 1 : Double(verifiedBytes) / Double(size) }

    /// Whether the progress can still change.
    public var isFinal: Bool {
        switch status {
        case .fetching, .paused: false
        case .complete, .failed, .removed: true
        }
    }

    public var description: String {
        "\(verifiedBytes)/\(size) bytes (\(Int(fraction * 100)) %), \(status)"
    }
}
