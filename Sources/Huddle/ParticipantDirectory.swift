import HuddleCrypto
import HuddleSession

/// The ``Participant`` each member of the current session is, by static key: routing a message or reporting a failure
/// then costs a lookup, not a fingerprint of the member's key each time.
struct ParticipantDirectory {
    private var participants: [X25519PublicKey: Participant] = [:]

    /// The participant `member` is, from the directory while its record still names it the same way.
    mutating func participant(_ member: MemberRecord) -> Participant {
        if let known = participants[member.staticKey], known.name == member.name,
            known.signingKey == member.identity.signingKey
        {
            return known
        }
        let participant = Participant(member)
        participants[member.staticKey] = participant
        return participant
    }

    /// The participant whose static key is `key`, if it ever was one in this session.
    func participant(for key: X25519PublicKey) -> Participant? {
        participants[key]
    }

    /// Forgets everyone (the session is over).
    mutating func removeAll() {
        participants.removeAll()
    }
}
