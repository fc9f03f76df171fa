import HuddleSession

/// Removing a participant: the group boundary's one deliberate door out.
extension GroupSession {
    /// Removes `participant` from the session for everyone, if the session's ``RemovalPolicy`` lets this node
    /// (chosen by its creator in ``HuddleNode/activate(_:removalPolicy:)``; the default lets only the creator).
    ///
    /// Returns once the removal is applied here and sent; every member checks the signature and the policy itself.
    /// The removed participant's session ends with ``InvalidationReason/removed(by:)``; the others see it go with
    /// ``ParticipantChange/DepartureReason/removed``, and messages still unconfirmed for it are reported with
    /// ``DeliveryFailure/Reason/removed``. Its identity is shut out of the session for good; every invitation open
    /// now closes (it knew them: make new ones for those still to join), and the session admission moves to a new
    /// secret it never learns, so it cannot come back by any invitation it saw or by the secret it held. A participant
    /// that already left can be removed as well, which keeps it out.
    ///
    /// - Throws: ``HuddleError/removalNotPermitted(_:)`` when the policy does not let this node remove,
    ///   ``HuddleError/cannotRemoveSelf``, ``HuddleError/notAParticipant(_:)`` for someone this session never had,
    ///   ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)``.
    public func remove(_ participant: Participant) async throws(HuddleError) {
        try context.requireJoined()
        guard participant != context.local else { throw .cannotRemoveSelf }
        guard let removed = participant.signingKey else { throw .notAParticipant(participant) }
        let removal = MemberRemoval(session: context.id, removing: removed, signingKey: engine.identity.signingKey)
        let author = removal.author
        let refusal: HuddleError? = try await engine.perform(in: context) { machine, endpoint, now in
            machine.update(&endpoint, now: now) { membership -> HuddleError? in
                guard let charter = membership.charter else { return .removalNotPermitted(nil) }
                guard charter.permitsRemoval(by: author) else {
                    return .removalNotPermitted(RemovalPolicy(charter.policy))
                }
                return membership.remove(removal) ? nil : .notAParticipant(participant)
            } ?? .notJoined
        }
        if let refusal { throw refusal }
    }
}
