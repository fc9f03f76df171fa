/// What happened to an ask-to-join request, as ``GroupSession/joinRequests`` reports it.
public enum JoinRequestChange: Hashable, Sendable {
    /// Someone asks to join; answer with ``GroupSession/admit(_:)`` or ``GroupSession/deny(_:)``.
    case asked(JoinRequest)
    /// A participant (this node, or another member) let the joiner in; it joins at the member it reached.
    case admitted(JoinRequest, by: Participant)
    /// A participant turned the joiner away: its join fails with ``JoinFailure/denied``.
    case denied(JoinRequest, by: Participant)
    /// Nobody answered in time (two minutes), or newer requests pushed it out (16 wait at most): the joiner's join
    /// fails with ``JoinFailure/unanswered``.
    case expired(JoinRequest)

    /// The request this change is about.
    public var request: JoinRequest {
        switch self {
        case .asked(let request), .admitted(let request, _), .denied(let request, _), .expired(let request): request
        }
    }
}
