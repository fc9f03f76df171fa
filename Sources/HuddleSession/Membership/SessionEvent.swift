import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// What a ``SessionCore`` (and the ``SessionMachine`` around it) tells the application: membership changes, the
/// messages members send, and the ends of the session's waits.
public enum SessionEvent: Sendable {
    /// The local node became a member (after joining).
    case joined
    /// A member became active (connected and in the roster).
    case participantJoined(MemberRecord)
    /// A member stopped being active.
    case participantLeft(MemberRecord, MembershipAction.DepartureReason)
    /// Nothing has arrived from an active member since `lastHeard`, keepalives notwithstanding
    /// (``ConnectionConfiguration/unresponsiveAfter``): it may have crashed or lost its network. It stays active until
    /// ``participantResponsive(_:)`` or, when its connection times out, ``participantLeft(_:_:)`` (unreachable).
    case participantUnresponsive(MemberRecord, lastHeard: Instant)
    /// A member reported unresponsive was heard from again.
    case participantResponsive(MemberRecord)
    /// The connection to an active member moved to another route (relayed to direct after hole punching, direct to
    /// relayed when the direct path failed, or to the member's new address after it moved); `smoothedRTT` is the
    /// connection's round-trip estimate at that moment; `relayingMember` is the member the route goes through when
    /// it is relayed by one (PROTOCOL.md section 10.3), `nil` otherwise.
    case pathChanged(MemberRecord, route: Route, smoothedRTT: Duration, relayingMember: MemberRecord?)
    /// The shared activity changed.
    case activityChanged(ActivityRecord)
    /// The session ended for everyone (`by` is `nil` when this node ended it).
    case ended(by: MemberRecord?)
    /// Joining failed.
    case joinFailed(JoinFailureCause)
    /// A member removed the local node (`by`: its record, when known). The owner closes the connections.
    case removed(by: MemberRecord?)
    /// This joiner's request waits for a member's answer (ask to join); the join timeout is extended by
    /// ``ProtocolLimits/joinApprovalTimeout``.
    case waitingForApproval
    /// A joiner asks to join; a member answers with ``SessionMembership/answerJoinRequest(_:admit:)``.
    case joinRequested(MemberRecord)
    /// An ask-to-join request was answered or expired.
    case joinRequestSettled(MemberRecord, JoinRequestOutcome)
    /// A reliable message from a member, on an application channel.
    case message(from: MemberRecord, channel: ChannelID, bytes: [UInt8])
    /// An unreliable datagram from a member.
    case datagram(from: MemberRecord, channel: ChannelID, bytes: [UInt8])
    /// A member delivered a reliable message this node sent (and every earlier one on its connection and channel);
    /// `tag` is the one it was sent with.
    case delivered(to: X25519PublicKey, channel: ChannelID, sequence: MessageSequence, tag: UInt64)
    /// The connection to a peer closed with these messages unacknowledged (never silently lost), for `reason`.
    /// `connection` is the one they were sent on (their sequence numbers belong to it).
    case undelivered(
        to: X25519PublicKey, connection: ConnectionID, [UndeliveredMessage], reason: DeliveryFailureReason)
    /// Messages queued in front of the endpoint for a peer were dropped before reaching it (its connection closed
    /// first; see ``UnsentMessages``), for `reason`. `to` is `nil` when the driver could not name the peer; `tags`
    /// are the tags they were sent with.
    case unsent(to: X25519PublicKey?, channel: ChannelID, count: Int, tags: [UInt64], reason: DeliveryFailureReason)
    /// No member welcomed this joiner within `after` (``SessionTiming/joinTimeout``, plus
    /// ``ProtocolLimits/joinApprovalTimeout`` when it was asked to wait for an answer): joining failed. The owner
    /// closes its connections; the membership is still joining and takes no further part.
    case joinTimedOut(after: Duration)
    /// A departure (leaving, or ending the session) is settled: every open connection acknowledged the announcement
    /// and everything else in flight (`acknowledged`), or ``SessionTiming/departureTimeout`` passed first. The owner
    /// closes the connections now; what is still unacknowledged will not be confirmed.
    case departed(acknowledged: Bool)
    /// The wait for a subscriber (``SessionMachine/waitForSubscriber(now:)``) ended without one.
    case subscriberWaitOver
}
