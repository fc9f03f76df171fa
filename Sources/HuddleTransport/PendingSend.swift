import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// A reliable message the driver accepted (``UDPEndpointDriver/send(_:on:to:)`` or
/// ``UDPEndpointDriver/enqueue(_:on:to:)``) and has not yet handed to the endpoint: first in the ``OutboundQueue``,
/// then, on the event loop, waiting for its channel's send window.
struct PendingSend {
    /// Resumes a ``UDPEndpointDriver/send(_:on:to:)`` caller once: with the sequence number once the endpoint took
    /// the message, or with the reason it never will.
    typealias Completion = CheckedContinuation<Result<MessageSequence, TransportError>, Never>

    /// The message.
    let message: [UInt8]
    /// Its channel.
    let channel: ChannelID
    /// The sender's tag (0: none), handed to the endpoint with the message (``Endpoint/send(_:on:to:tag:)``) and
    /// named again in an unsent report.
    var tag: UInt64 = 0
    /// Its connection, or the peer whose connection it goes to (resolved on the event loop when the queue is
    /// drained).
    let destination: OutboundDestination
    /// The caller's ticket (cancellation, identity).
    let ticket: SendTicket?
    /// Set for ``UDPEndpointDriver/send(_:on:to:)``; `nil` for ``UDPEndpointDriver/enqueue(_:on:to:)``, whose caller
    /// has already returned: a message that never reaches the endpoint is then reported as
    /// `EndpointEvent.unsent` and counted in ``TransportStatistics/messagesUnsent``.
    let completion: Completion?

    /// What this message occupies of its destination's queue allowance.
    var key: OutboundQueue.Key { OutboundQueue.Key(destination: destination, channel: channel) }

    /// Resolves the caller (if it waits) with `result`; returns `false` if nobody waits, so the caller of this method
    /// must report a failure as unsent.
    func resolve(_ result: Result<MessageSequence, TransportError>) -> Bool {
        guard let completion else { return false }
        completion.resume(returning: result)
        return true
    }
}

/// Where a queued message goes: a connection, or whatever connection a peer has when the queue is drained.
enum OutboundDestination: Hashable, Sendable {
    /// A connection by id.
    case connection(ConnectionID)
    /// The peer's current connection (looked up on the event loop, so a peer that reconnected is reached on its new
    /// connection).
    case peer(X25519PublicKey)
}
