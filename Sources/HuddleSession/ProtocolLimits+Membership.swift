import HuddleProtocol

extension ProtocolLimits {
    /// The most entries (members and departed members) a session's roster holds: 256. A WELCOME or join beyond it
    /// is refused; the oldest departed entries are forgotten first.
    public static let maxRosterEntries = 256
    /// Invitations one member keeps open at once on every node: 16. A 17th closes that member's oldest, so a member
    /// that floods invitations can neither fill the node's ``ProtocolLimits/maxAdmissions`` nor close another
    /// member's; when all admissions are taken, the member holding the most gives up its oldest.
    public static let maxOpenInvitationsPerMember = 16
    /// Member records one member can have in this node's roster before their members connected here: 32. Any member
    /// holds the session secret and could make up identities, so a MEMBER_JOINED for someone not connected is only
    /// the sender's claim; beyond this bound such records are refused and counted
    /// (``SessionMembership/membersRefused``), so a hostile member can neither fill the roster (and lock out joins)
    /// nor make every node dial hundreds of made-up addresses. A record stops counting when its member completes a
    /// handshake here or leaves. Honest bursts larger than this lose nothing: a welcomed member dials every member of
    /// its roster and sends its own record over the connection, which is always taken.
    public static let maxUnconfirmedMembersPerIntroducer = 32
    /// Removals a member remembers, and so identities it keeps shut out: 256 (a roster's worth). Beyond it the oldest
    /// removal is forgotten; its member stays out of the session admission (its secret rotated away) and of every
    /// invitation open when it was removed (they closed), so only a ticket made later lets it in again.
    public static let maxRemovals = 256
    /// Departures (MEMBER_LEFT) a member remembers with the admission epoch each left under: 256 (a roster's worth).
    /// Until the admission moves on, a departed identity is refused under it and in its own record over its old
    /// connection; a forgotten departure's admission moved on long ago.
    public static let maxDepartures = 256
    /// How long the members that learn of a departure wait, per place, before drawing the next admission key
    /// themselves: 250 ms. The active member with the lowest Noise key draws at once; the next one 250 ms later if no
    /// newer key reached it by then (the first may have crashed or missed the departure), and so on, so one
    /// departure normally costs one rotation.
    public static let departureRotationStagger = Duration.milliseconds(250)
    /// Invitations closed by removals that a member remembers, so that none opens again when a member that missed the
    /// removal offers it: 1,024 (16 removals' worth of a full set of 64 open invitations). Beyond it the oldest is
    /// forgotten.
    public static let maxRevokedInvitations = 1_024
    /// Ask-to-join requests a member keeps waiting at once: 16. A 17th pushes out the oldest (its members report it
    /// expired, and its sponsor turns the joiner away as unanswered), so joiners holding a leaked ask-to-join ticket
    /// cannot grow a member's state or bury the requests of people the members expect.
    public static let maxPendingJoinRequests = 16
    /// Answers to ask-to-join requests a member remembers: 64. A joiner that asks another member after its sponsor
    /// answered (or crashed) gets the same answer, and nobody is asked about it twice.
    public static let maxRememberedJoinAnswers = 64
    /// How long an ask-to-join request waits for a member's answer: 120 s, time for a person to notice and decide.
    /// Then its sponsor turns the joiner away as unanswered (JOIN_REFUSED 3) and every member drops the request. A
    /// joiner told it waits (JOIN_WAITING) extends its own join timeout by this much.
    public static let joinApprovalTimeout = Duration.seconds(120)
    /// The longest member display name, in UTF-8 bytes: 64.
    public static let maxMemberNameBytes = 64
    /// The most addresses a member record lists: 8.
    public static let maxMemberAddresses = 8
    /// The largest encoded activity: 64 KiB.
    public static let maxActivityBytes = 64 * 1024
    /// The largest membership message: a WELCOME with a full roster, activity and invitations fits in 256 KiB, the
    /// message limit.
    public static let maxMembershipMessageBytes = 256 * 1024
    /// Application messages held, per peer, from a peer that reached this node under an invitation before its
    /// announcement made it a member (see ``SessionCore``): at most this many bytes (1 MiB). Beyond it the peer's
    /// connection is closed, so its unacknowledged messages are reported to it instead of being lost (what it already
    /// acknowledged is held all the same). Held messages survive reconnections and are dropped (counted) only when
    /// the membership forgets the peer. A peer that reconnects and sends again each time meets a hard ceiling at twice
    /// this bound, beyond which its messages are dropped and counted (an honest peer, closed at the bound, does not
    /// come near it).
    public static let maxEarlyMessageBytesPerPeer = 1024 * 1024
    /// ... and at most this many messages.
    public static let maxEarlyMessagesPerPeer = 1024
    /// How long a joiner waits for the WELCOME after a join request before it asks again, the next member its ticket
    /// names that it is connected to (or the same one): the one it asked may itself be joining, leaving, or have
    /// restarted and forgotten the request. Doubles after each attempt, up to ``maxJoinRequestInterval``.
    public static let joinRequestInterval = Duration.seconds(2)
    /// The longest wait between join requests.
    public static let maxJoinRequestInterval = Duration.seconds(8)
    /// How often a joiner dials a member of its ticket again after an established connection to it closed before the
    /// join completed (the member evicted a pending joiner under a handshake flood, restarted, or the path broke);
    /// then the join fails if no other member of the ticket is connected.
    public static let maxJoinRedialsPerMember = 3
    /// The first wait before dialling an unreachable member again (after a partition heals, both sides would
    /// otherwise wait for the other forever); each failed attempt doubles it, up to ``maxRedialInterval``.
    public static let initialRedialInterval = Duration.seconds(1)
    /// The longest wait between attempts to reach an unreachable member.
    public static let maxRedialInterval = Duration.seconds(30)
    /// How often a member forwards activity values it received (§8.2): at most one forward to each other member per
    /// interval, carrying the value current when it goes out. Every member adopts every value at once (the register's
    /// order alone decides), so convergence is unchanged; only the redundant forwarding is paced. A member that sets
    /// the activity a thousand times a second then costs each other member at most 10 forwards a second to each peer,
    /// not one per change: without it each change crossed every link (O(n²) messages per change).
    public static let activityForwardInterval = Duration.milliseconds(100)
}
