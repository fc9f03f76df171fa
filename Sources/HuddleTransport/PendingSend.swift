import HuddleProtocol
import HuddleWire

/// A message waiting on the event loop for its channel's send window to open.
struct PendingSend {
    /// The caller's ticket (cancellation, identity).
    let ticket: SendTicket
    /// The message.
    let message: [UInt8]
    /// Its channel.
    let channel: ChannelID
    /// Its connection.
    let connection: ConnectionID
    /// Resumed exactly once: with the sequence number once queued, or with the reason it never will be.
    let continuation: CheckedContinuation<Result<MessageSequence, TransportError>, Never>

    /// Whether this send and `other` must keep their relative order (same connection and channel).
    func isOrdered(with other: PendingSend) -> Bool {
        connection == other.connection && channel == other.channel
    }
}
