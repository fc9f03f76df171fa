/// What one connection's receive channels may hold for reassembly and ordering, shared by all of its channels.
///
/// The connection owns one and passes it to every ``ReceiveChannel/receive(_:budget:)`` call. A message is admitted
/// when its first fragment arrives, before anything is allocated for it, and only if afterwards:
///
/// - at most ``maxIncompleteMessages`` messages are incomplete (some but not all of their bytes received);
/// - at most ``maxBytes`` bytes are buffered: every admitted message counts its full total length (what is
///   allocated for it) until it becomes deliverable, including complete messages still waiting for an earlier one;
/// - the total length of all messages ever admitted stays within ``flowControlLimit``.
///
/// Otherwise the fragment is refused with ``ProtocolError/protocolViolation(_:)`` carrying
/// ``ProtocolViolation/reassemblyBudgetExceeded(limit:)`` (the limit is ``maxIncompleteMessages`` or ``maxBytes``,
/// whichever was hit, checked in that order) or ``ProtocolViolation/flowControlExceeded(limit:)``, and nothing
/// changes.
///
/// Flow control: the receiver advertises MAX_DATA as a count of message bytes (total lengths of messages the peer may
/// start). Advertising at most ``releasedBytes`` + ``maxBytes`` (see ``largestSafeFlowControlLimit``), and setting
/// ``flowControlLimit`` to what was advertised, keeps an honest sender inside the byte budget at all times.
public struct ReassemblyBudget: Sendable {
    /// The most incomplete messages held at once (default ``ProtocolLimits/maxIncompleteMessagesPerConnection``).
    public let maxIncompleteMessages: Int
    /// The most bytes buffered at once (default ``ProtocolLimits/maxReassemblyBytesPerConnection``); it only grows,
    /// with the receive window (``raiseMaxBytes(to:)``).
    public private(set) var maxBytes: Int
    /// Messages with some but not all of their bytes received.
    public private(set) var incompleteMessages = 0
    /// The total length of all admitted messages that are not yet deliverable.
    public private(set) var bufferedBytes = 0
    /// The cumulative total length of every message admitted so far (the peer's consumed flow-control credit).
    public private(set) var admittedBytes: UInt64 = 0
    /// The cumulative total length of every admitted message that has become deliverable.
    public private(set) var releasedBytes: UInt64 = 0
    /// The largest ``admittedBytes`` the peer may reach: the MAX_DATA this side advertised. Defaults to unlimited, so
    /// flow control is not enforced until the connection sets it; it should only ever rise.
    public var flowControlLimit: UInt64 = .max

    /// An empty budget with the given limits.
    public init(
        maxIncompleteMessages: Int = ProtocolLimits.maxIncompleteMessagesPerConnection,
        maxBytes: Int = ProtocolLimits.maxReassemblyBytesPerConnection
    ) {
        self.maxIncompleteMessages = maxIncompleteMessages
        self.maxBytes = maxBytes
    }

    /// The largest MAX_DATA the receiver can advertise without letting an honest sender overrun ``maxBytes``:
    /// everything already released plus the whole byte budget. A receiver that wants the application to pace the
    /// sender advertises less (released bytes the application has consumed, plus ``maxBytes``).
    public var largestSafeFlowControlLimit: UInt64 { releasedBytes + UInt64(maxBytes) }

    /// Raises ``maxBytes`` to `bytes` (never lowers it): the receiver is about to advertise a larger window.
    mutating func raiseMaxBytes(to bytes: Int) {
        maxBytes = max(maxBytes, bytes)
    }

    /// Admits a new message of `totalLength` bytes, incomplete or not, or throws and changes nothing.
    mutating func admit(totalLength: Int, incomplete: Bool) throws(ProtocolError) {
        if incomplete, incompleteMessages >= maxIncompleteMessages {
            throw .protocolViolation(.reassemblyBudgetExceeded(limit: maxIncompleteMessages))
        }
        guard totalLength <= maxBytes - bufferedBytes else {
            throw .protocolViolation(.reassemblyBudgetExceeded(limit: maxBytes))
        }
        let (admitted, overflow) = admittedBytes.addingReportingOverflow(UInt64(totalLength))
        guard !overflow, admitted <= flowControlLimit else {
            throw .protocolViolation(.flowControlExceeded(limit: flowControlLimit))
        }
        admittedBytes = admitted
        bufferedBytes += totalLength
        if incomplete { incompleteMessages += 1 }
    }

    /// Records that an admitted incomplete message received its last byte.
    mutating func completeMessage() {
        precondition(incompleteMessages > 0, "no incomplete message to complete")
        incompleteMessages -= 1
    }

    /// Releases an admitted, complete message of `totalLength` bytes that became deliverable.
    mutating func release(totalLength: Int) {
        precondition(totalLength <= bufferedBytes, "releasing more than is buffered")
        bufferedBytes -= totalLength
        releasedBytes += UInt64(totalLength)
    }
}
