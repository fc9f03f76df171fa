/// Who receives a message (``Messenger/send(_:to:)-(Message,_)``), as in GroupActivities.
public enum Participants: Sendable, Hashable {
    /// Every other active participant.
    case all
    /// Only these participants (each must be active; this node, if named, is left out).
    case only(Set<Participant>)

    /// Only `participant`.
    public static func only(_ participant: Participant) -> Participants { .only([participant]) }
}
