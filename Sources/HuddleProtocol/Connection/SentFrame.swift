/// What a sent packet carried that may need sending again if the packet is lost (QUIC's rule: retransmit frames,
/// never packets).
enum SentFrame: Sendable {
    /// A message fragment.
    case fragment(FragmentRecord)
    /// A MAX_DATA frame (the latest limit is re-sent, not the lost value).
    case maxData
    /// An ACK frame with this largest acknowledged number (once acknowledged, older ranges need not be repeated).
    case ack(largest: UInt64)
}
