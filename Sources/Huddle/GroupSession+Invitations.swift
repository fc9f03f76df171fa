import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession

/// Letting more devices in: tickets (``makeInvitation(validFor:requiresApproval:uses:)``) and the nearby announcement that hands one out.
extension GroupSession {
    /// A ticket that lets more devices join, valid for `duration`. Any member may invite; the ticket names the
    /// current members, so it keeps working after this node leaves.
    ///
    /// With `uses` it lets at most that many joiners in (`1`: a single-use ticket). Such a ticket names
    /// only this node, which alone keeps its count (were every member to count, together they could let in more), so
    /// it works while this node is in the session; a joiner that comes too late fails with
    /// ``JoinFailure/invitationClosed``.
    ///
    /// With `requiresApproval` it is an ask-to-join ticket: a joiner holding it waits (``HuddleNode/join(_:as:onWaitingForApproval:)``
    /// says so) until a participant answers its request, which every member sees on ``joinRequests``; it gets in
    /// only once one of them calls ``admit(_:)``. A leaked ask-to-join ticket therefore lets nobody in unasked.
    ///
    /// - Throws: ``HuddleError/invalidUseCount(_:)`` for `uses` below 1, ``HuddleError/notJoined`` before
    ///   ``join()``, ``HuddleError/invalidated(_:)`` once this session is over.
    public func makeInvitation(
        validFor duration: Duration = .seconds(24 * 3600), requiresApproval: Bool = false, uses: Int? = nil
    ) async throws(HuddleError) -> Invitation {
        try await makeInvitation(validFor: duration, requiresApproval: requiresApproval, uses: uses, sharingTurn: true)
    }

    /// ``makeInvitation(validFor:requiresApproval:uses:)``, with the node's shared TURN servers only when
    /// `sharingTurn` (a nearby beacon, which everyone on the segment hears, carries none: its joiners are on the LAN).
    func makeInvitation(
        validFor duration: Duration, requiresApproval: Bool, uses: Int?, sharingTurn: Bool
    ) async throws(HuddleError) -> Invitation {
        if let uses, uses < 1 { throw .invalidUseCount(uses) }
        try context.requireJoined()
        var random = SystemRandomGenerator()
        let secret = SecureBytes(count: 32, using: &random)
        let expiresAt = Date().addingTimeInterval(Double(duration.components.seconds))
        let grant: InvitationGrant
        do {
            grant = try InvitationGrant(
                secret: secret, expiresAt: UInt64(expiresAt.timeIntervalSince1970), requiresApproval: requiresApproval,
                uses: uses)
        } catch {
            // 32 random bytes always derive; a failure here is libsodium's, which the invitation cannot be made without.
            throw .joinFailed(.invitationUnusable)
        }
        let (hints, relays) = try await engine.perform(in: context) { machine, endpoint, now in
            let hints = machine.update(&endpoint, now: now) { membership in
                membership.openInvitation(grant)
                // A limited ticket names this node alone: no other member holds its invitation.
                return membership.ticketHints(limit: uses == nil ? Invitation.maxMembers : 1)
            }
            return (hints ?? [], endpoint.relays(now: now).map(\.address))
        }
        let members = hints.filter { !$0.addresses.isEmpty }.map { hint in
            Invitation.Member(staticKey: hint.staticKey, addresses: hint.addresses)
        }
        return Invitation(
            session: context.id, secret: secret, expiresAt: expiresAt,
            inviterSigningKey: engine.identity.publicIdentity.signingKey, inviterName: engine.name, members: members,
            relays: relays, turnServers: sharingTurn ? engine.sharedTurnServers : [])
    }

    /// Announces the session on the local network as `name`, so people nearby find it with
    /// ``NearbySession/browse()`` (`huddle discover`) and join without a ticket passed to them: a beacon with `name`
    /// and a ticket valid for `duration` goes to a multicast group about once a second until
    /// ``NearbyAnnouncement/stop()``, the ticket's expiry, or this node leaving.
    ///
    /// Anyone on the network segment who hears a beacon can join while it runs (docs/SECURITY.md, "Local network
    /// discovery"); announce only where that is what you want, and briefly. The node must listen on `0.0.0.0` or an
    /// IPv4 interface address: beacons from loopback reach no other machine.
    ///
    /// - Throws: ``HuddleError/notJoined`` before ``join()``, ``HuddleError/invalidated(_:)`` once this session is
    ///   over; ``HuddleError/localNetwork(_:)`` when no interface can send
    ///   the beacon.
    public func announceNearby(
        as name: String, validFor duration: Duration = .seconds(600)
    ) async throws(HuddleError) -> NearbyAnnouncement {
        // The session's own state first: a stale handle says its session is over, whatever the network allows.
        try context.requireJoined()
        let channels = try await NearbyAnnouncement.openChannels(bound: engine.driver.localAddress)
        let invitation: Invitation
        do throws(HuddleError) {
            invitation = try await makeInvitation(
                validFor: duration, requiresApproval: false, uses: nil, sharingTurn: false)
        } catch {
            for channel in channels { try? await channel.close() }
            throw error
        }
        let (context, engine) = (self.context, self.engine)
        return try NearbyAnnouncement(
            name: name, invitation: invitation, channels: channels,
            isLive: { !context.isInvalidated },
            closeInvitation: { await Self.close(invitation, in: context, engine: engine) })
    }

    /// Revokes `invitation` for everyone: every member closes it (members that are unreachable now learn of it when
    /// they reconnect) and none opens it again, so nobody who has not joined with it yet can. Joins it already let in
    /// stay. Any member may revoke any invitation of its session, as any may make one.
    ///
    /// - Throws: ``HuddleError/notJoined``, ``HuddleError/invalidated(_:)``; ``HuddleError/foreignInvitation`` for an
    ///   invitation of another session.
    public func revoke(_ invitation: Invitation) async throws(HuddleError) {
        try context.requireJoined()
        guard invitation.session == context.id else { throw .foreignInvitation }
        guard let id = try? SessionKeys.admissionID(invitationSecret: invitation.secret) else {
            throw .foreignInvitation
        }
        _ = try await engine.perform(in: context) { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.revokeInvitation(id) }
        }
    }

    /// Closes `invitation` on this node (other members close it when it expires). A session that is over took its
    /// invitations with it.
    private static func close(_ invitation: Invitation, in context: SessionContext, engine: SessionEngine) async {
        guard let id = try? SessionKeys.admissionID(invitationSecret: invitation.secret) else { return }
        _ = try? await engine.perform(in: context) { machine, endpoint, now in
            machine.update(&endpoint, now: now) { $0.closeInvitation(id) }
        }
    }
}
