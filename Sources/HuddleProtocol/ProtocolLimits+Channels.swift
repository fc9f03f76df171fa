import HuddleWire

extension ProtocolLimits {
    /// The most message bytes a ``SendChannel`` holds that the peer has not yet acknowledged: 4 MiB.
    ///
    /// Beyond it ``SendChannel/enqueue(_:)`` throws ``ProtocolError/queueFull(limit:)`` and the caller suspends
    /// (backpressure). Twice the peer's reassembly budget (``maxReassemblyBytesPerConnection``, which also bounds the
    /// flow-control window) so the sender can keep a full window in flight while the application refills the queue,
    /// and room for 16 messages of the maximum size (256 KiB).
    public static let maxQueuedBytesPerChannel = 4 * 1024 * 1024

    /// How far a message sequence number may run ahead of the receiver's next expected one: 1024.
    ///
    /// A fragment of sequence `s` with `s - next > maxMessageSequenceGap` is
    /// ``ProtocolViolation/sequenceGapTooLarge(channel:sequence:next:)`` (TEST-MATRIX D9). It bounds how many
    /// out-of-order messages one channel can make a receiver remember, while leaving 1024 small messages in flight
    /// per channel and round trip.
    public static let maxMessageSequenceGap = 1024

    /// The most messages a ``SendChannel`` keeps outstanding, counted from its oldest unacknowledged sequence to its
    /// newest: ``maxMessageSequenceGap`` + 1 = 1025.
    ///
    /// Every message below the sender's oldest unacknowledged one has been received in full, so the receiver's next
    /// expected sequence is at least that oldest one; capping the span here means an honest sender can never trip the
    /// receiver's gap check. Beyond it ``SendChannel/enqueue(_:)`` throws ``ProtocolError/queueFull(limit:)``.
    public static let maxQueuedMessagesPerChannel = maxMessageSequenceGap + 1

    /// The most incomplete messages (some but not all fragments received) a receiver holds per connection, across
    /// all channels: 16 (TEST-MATRIX D7).
    ///
    /// Opening a 17th is ``ProtocolViolation/reassemblyBudgetExceeded(limit:)``. Complete messages waiting for an
    /// earlier sequence count against ``maxReassemblyBytesPerConnection`` only. Senders keep within it with an
    /// ``IncompleteMessageAllowance`` of the same size.
    public static let maxIncompleteMessagesPerConnection = 16

    /// The most message bytes a receiver buffers per connection for reassembly and ordering, across all channels:
    /// 2 MiB (TEST-MATRIX D7).
    ///
    /// A message is charged its full total length when its first fragment arrives (that is what is allocated) and
    /// released when it becomes deliverable. Admitting a message beyond it is
    /// ``ProtocolViolation/reassemblyBudgetExceeded(limit:)``. A receiver that advertises flow-control credit of at
    /// most this much beyond what it has released never sees an honest sender exceed it.
    public static let maxReassemblyBytesPerConnection = 2 * 1024 * 1024
}
