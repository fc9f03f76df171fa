import HuddleSession

/// Ask to join: people holding an ask-to-join ticket wait until a participant lets them in.
extension GroupSession {
    /// The ask-to-join requests waiting for an answer now, oldest first (at most 16; each waits two minutes).
    public var pendingJoinRequests: [JoinRequest] { context.pendingJoinRequests.withLockedValue { $0 } }

    /// Every ask-to-join request and what became of it, from the session's start, in order; none is dropped, however
    /// late or slowly an observer reads. Every member sees every request and every answer, whichever member answered.
    public var joinRequests: AsyncStream<JoinRequestChange> { context.joinRequests.stream() }

    /// Lets the joiner of `request` in: the member its request reached welcomes it, and every member learns who
    /// admitted it. The first answer given anywhere decides; the request then leaves ``pendingJoinRequests``.
    ///
    /// - Throws: ``HuddleError/joinRequestNotPending(_:)`` when the request no longer waits (answered, expired),
    ///   ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)``.
    public func admit(_ request: JoinRequest) async throws(HuddleError) {
        try await answer(request, admit: true)
    }

    /// Turns the joiner of `request` away: its join fails with ``JoinFailure/denied``, and the identity is refused at
    /// once if it asks again in this session. Every member learns who denied it.
    ///
    /// - Throws: ``HuddleError/joinRequestNotPending(_:)`` when the request no longer waits (answered, expired),
    ///   ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)``.
    public func deny(_ request: JoinRequest) async throws(HuddleError) {
        try await answer(request, admit: false)
    }

    private func answer(_ request: JoinRequest, admit: Bool) async throws(HuddleError) {
        try context.requireJoined()
        let joiner = request.signingKey
        let answered = try await engine.perform(in: context) { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.answerJoinRequest(joiner, admit: admit) } ?? false
        }
        guard answered else { throw .joinRequestNotPending(request) }
    }
}
