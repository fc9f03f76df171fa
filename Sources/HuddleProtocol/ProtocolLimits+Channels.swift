import HuddleWire

extension ProtocolLimits {
    /// The largest message a duplicated channel sends twice (``ConnectionConfiguration/duplicatedChannels``): what
    /// fits one base-size packet with room to spare, so only small messages double their cost.
    public static let maxDuplicatedMessageSize = 1_100

    /// The most message bytes a ``SendChannel`` holds that the peer has not yet acknowledged: 32 MiB.
    ///
    /// Beyond it ``SendChannel/enqueue(_:)`` throws ``ProtocolError/queueFull(limit:)`` and the caller suspends
    /// (backpressure). Twice the largest receive window (``maxReceiveWindowPerConnection``) so the sender can keep a
    /// full window in flight while the application refills the queue: with 4 MiB, a 1 Gbit/s x 100 ms path carried at
    /// most 4 MiB per round trip (measured 26 MB/s in the `lfn` profile, against 40 MB/s with 32 MiB).
    public static let maxQueuedBytesPerChannel = 32 * 1024 * 1024

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
    /// all channels: 256 (TEST-MATRIX D7).
    ///
    /// Opening a 257th is ``ProtocolViolation/reassemblyBudgetExceeded(limit:)``. Complete messages waiting for an
    /// earlier sequence count against the reassembly byte budget only. Senders keep within it with an
    /// ``IncompleteMessageAllowance`` of the same size. 256 messages of 64 KiB fill the largest receive window
    /// (``maxReceiveWindowPerConnection``, 16 MiB): with 16, a sender of 64 KiB messages could have only 1 MiB in
    /// flight, about 10 MB/s on a 100 ms path whatever the bandwidth. The byte budget, not this count, bounds memory.
    public static let maxIncompleteMessagesPerConnection = 256

    /// The receive window a connection starts with: the most message bytes a receiver buffers per connection for
    /// reassembly and ordering, across all channels, until auto-tuning raises it: 2 MiB (TEST-MATRIX D7).
    ///
    /// A message is charged its full total length when its first fragment arrives (that is what is allocated) and
    /// released when it becomes deliverable. Admitting a message beyond it is
    /// ``ProtocolViolation/reassemblyBudgetExceeded(limit:)``. A receiver that advertises flow-control credit of at
    /// most this much beyond what it has released never sees an honest sender exceed it.
    public static let maxReassemblyBytesPerConnection = 2 * 1024 * 1024

    /// The largest receive window (flow-control credit, and with it the reassembly byte budget) one connection grows
    /// to: 16 MiB. It starts at ``maxReassemblyBytesPerConnection`` and doubles when the application consumes credit
    /// faster than the path could refill a window that size (see `Connection`'s flow control), so a connection that
    /// is window-limited on a long, fast path (1 Gbit/s x 100 ms is 12.5 MB) is not held to 2 MiB per round trip.
    public static let maxReceiveWindowPerConnection = 16 * 1024 * 1024

    /// The most receive window all connections of one endpoint together may have grown beyond their initial
    /// ``maxReassemblyBytesPerConnection``: 64 MiB, so a node's reassembly memory stays bounded whatever the number
    /// of peers (64 peers at 2 MiB plus 64 MiB of growth is at most 192 MiB). A connection whose window would grow
    /// past it keeps its current window.
    public static let maxReceiveWindowGrowthPerEndpoint = 64 * 1024 * 1024
}
