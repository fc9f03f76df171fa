import HuddleCrypto
import HuddleProtocol

/// Members relaying for members (PROTOCOL.md section 10.3): while a member, the node relays for the roster's other
/// members and registers with the members it reaches directly whose keys sort lowest, at most
/// ``ProtocolLimits/maxMemberRelays``. Two members that cannot meet (both behind symmetric NATs) but reach a third
/// pick the same third when it is among the lowest keys both reach, and their first handshakes already go through it.
extension SessionCore {
    /// Brings the endpoint's relay service and member relays in line with the roster and the connections, when
    /// something they depend on changed (``memberRelaysStale``) or a registration is due for its check.
    mutating func updateMemberRelays(_ endpoint: inout Endpoint, now: Instant) {
        let checkDue = memberRelayCheckAt.map { $0 <= now } ?? false
        guard memberRelaysStale || checkDue else { return }
        memberRelaysStale = false
        memberRelayCheckAt = nil
        guard relaysForMembers, membership.phase == .member else {
            endpoint.stopServingAsRelay()
            for relay in endpoint.memberRelays(now: now) { endpoint.removeMemberRelay(relay.member) }
            memberRelaySince = [:]
            return
        }
        let others = membership.roster.dropFirst().map(\.staticKey)
        endpoint.serveAsRelay(for: Set(others))
        for (key, until) in memberRelaysDeclined where until <= now { memberRelaysDeclined[key] = nil }
        // A member that never answered does not relay: its place goes to the next one.
        for relay in endpoint.memberRelays(now: now) where !relay.isRegistered {
            guard let since = memberRelaySince[relay.member],
                now - since >= ProtocolLimits.memberRelayConfirmTimeout
            else { continue }
            memberRelaysDeclined[relay.member] = now + ProtocolLimits.memberRelayDeclinePeriod
        }
        let chosen = others.count < 2 ? [] : memberRelayChoice(among: others, endpoint: endpoint)
        let chosenKeys = Set(chosen.map(\.key))
        for relay in endpoint.memberRelays(now: now) where !chosenKeys.contains(relay.member) {
            endpoint.removeMemberRelay(relay.member)
            memberRelaySince[relay.member] = nil
        }
        let registeredAt = Dictionary(
            uniqueKeysWithValues: endpoint.memberRelays(now: now).map { ($0.member, $0.address) })
        for (key, address) in chosen {
            // A new registration, or one that follows the member to a new address (its connection migrated), gets
            // its full wait: the old address's confirmation says nothing about the new one's.
            if registeredAt[key] != address { memberRelaySince[key] = now }
            endpoint.addMemberRelay(key, at: address, now: now)
        }
        // The next look: when an unconfirmed registration's wait ends, or a passed-over member may be asked again.
        var next: Instant?
        for relay in endpoint.memberRelays(now: now) where !relay.isRegistered {
            if let since = memberRelaySince[relay.member] {
                let at = since + ProtocolLimits.memberRelayConfirmTimeout
                next = min(next ?? at, at)
            }
        }
        for until in memberRelaysDeclined.values { next = min(next ?? until, until) }
        memberRelayCheckAt = next
    }

    /// The members to register with: those reached on an established direct connection, not passed over, lowest
    /// keys first (bytewise), at most ``ProtocolLimits/maxMemberRelays``, each with its direct address.
    private func memberRelayChoice(
        among members: [X25519PublicKey], endpoint: Endpoint
    ) -> [(key: X25519PublicKey, address: NetworkAddress)] {
        var reached: [(key: X25519PublicKey, address: NetworkAddress)] = []
        for key in members where memberRelaysDeclined[key] == nil {
            if let address = endpoint.establishedDirectAddress(of: key) { reached.append((key, address)) }
        }
        reached.sort { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        return Array(reached.prefix(ProtocolLimits.maxMemberRelays))
    }
}
