import HuddleCrypto
import HuddleProtocol

/// The members of a session other than the local node, as one member holds them: every member record it knows,
/// present or departed, in join order, and who introduced the records whose members have not connected here yet.
///
/// A sub-machine of ``SessionMembership``, which keeps the local member's own record, the session's clock and the
/// connections (``Reachability``), and turns what this roster decides into actions. Guarantees:
/// - At most ``ProtocolLimits/maxRosterEntries`` entries with the local node's own: ``makeRoom()`` forgets the oldest
///   departed entry to make room and refuses when every entry is present (present members are never forgotten).
/// - Join order is the order keys were first inserted; a departed member that joins again keeps its place.
/// - A record counts as *unconfirmed* against the member that introduced it until its own member completes a
///   handshake here (``confirm(_:)``) or leaves, and one introducer has at most
///   ``ProtocolLimits/maxUnconfirmedMembersPerIntroducer`` of them (``mayIntroduce(by:)``).
struct Roster: Sendable {
    /// One member record and what this node knows of it.
    struct Entry: Sendable {
        /// The record, with the epoch of the member's latest join known here.
        var record: MemberRecord
        /// Whether the member is in the session (`false`: it announced its departure; the entry stays, so an older
        /// announcement of the same join cannot bring it back, until ``Roster/makeRoom()`` forgets it).
        var present: Bool
        /// The member whose MEMBER_JOINED brought this record while the record's own member had not completed a
        /// handshake with this node: the record is *unconfirmed*, and counts against that member's
        /// ``ProtocolLimits/maxUnconfirmedMembersPerIntroducer``. `nil` once the member connected here, and for
        /// records from a WELCOME, a join request or the member itself.
        var introducer: X25519PublicKey? = nil
    }

    /// Entries by the member's Noise static key.
    private var entries: [X25519PublicKey: Entry] = [:]
    /// Every key of ``entries``, in join order (the order members are reported and messages fan out in).
    private(set) var order: [X25519PublicKey] = []

    /// How many entries the roster holds, departed ones included (the local node's own is not one of them).
    var count: Int { entries.count }

    /// The entry for `key`, present or departed.
    func entry(_ key: X25519PublicKey) -> Entry? { entries[key] }

    /// Whether the roster has an entry for `key`, present or departed: such a peer was a member, and its membership
    /// messages are not a joiner's.
    func contains(_ key: X25519PublicKey) -> Bool { entries[key] != nil }

    /// The Noise key of the member (present or departed) whose identity signs with `signingKey`.
    func key(signing signingKey: Ed25519PublicKey) -> X25519PublicKey? {
        order.first { entries[$0]?.record.identity.signingKey == signingKey }
    }

    /// Whether `key` belongs to a present member.
    func isPresent(_ key: X25519PublicKey) -> Bool { entries[key]?.present == true }

    /// The record of present member `key`.
    func record(_ key: X25519PublicKey) -> MemberRecord? { entries[key].flatMap { $0.present ? $0.record : nil } }

    /// The keys of the present members, in join order.
    var presentKeys: [X25519PublicKey] { order.filter { entries[$0]!.present } }

    /// The records of the present members, in join order.
    var records: [MemberRecord] { order.compactMap { record($0) } }

    /// The records of the present members whose keys are not in `excluded`, in join order.
    func records(excluding excluded: Set<X25519PublicKey>) -> [MemberRecord] {
        order.compactMap { key in excluded.contains(key) ? nil : record(key) }
    }

    /// The records of the present members whose keys are in `included`, in join order.
    func records(among included: Set<X25519PublicKey>) -> [MemberRecord] {
        order.compactMap { key in included.contains(key) ? record(key) : nil }
    }

    /// Whether `record` is a later join than the roster knows of its member (present or departed): only then does it
    /// change anything. Gossip repeats records on every new connection, so the same record again is not news.
    func isNewer(_ record: MemberRecord) -> Bool {
        guard let existing = entries[record.staticKey] else { return true }
        return record.epoch > existing.record.epoch
    }

    /// Present records `introducer` brought whose members have not connected here.
    func unconfirmedCount(introducedBy introducer: X25519PublicKey) -> Int {
        entries.values.reduce(0) { $0 + ($1.present && $1.introducer == introducer ? 1 : 0) }
    }

    /// Whether `introducer` may put one more unconfirmed record in the roster: any member holds the session secret
    /// and can make up identities, so what one member claims is bounded until those members show up.
    func mayIntroduce(by introducer: X25519PublicKey) -> Bool {
        unconfirmedCount(introducedBy: introducer) < ProtocolLimits.maxUnconfirmedMembersPerIntroducer
    }

    /// Makes room for one more entry by forgetting the oldest departed one (in join order) when the roster is at
    /// its limit; `false` when it is full of present members. Called before every insertion that may add an entry,
    /// also when the record's key is known already (the bound then holds however the insertion turns out).
    mutating func makeRoom() -> Bool {
        // The local node's own record is the limit's last place.
        guard entries.count + 1 >= ProtocolLimits.maxRosterEntries else { return true }
        guard let oldest = order.first(where: { entries[$0]?.present == false }) else { return false }
        entries[oldest] = nil
        order.removeAll { $0 == oldest }
        return true
    }

    /// Whether the roster holds `record`'s identity for its member (present or departed). Only records whose
    /// identity binding was checked are inserted, so such an identity needs no check again.
    func holdsIdentity(of record: MemberRecord) -> Bool {
        entries[record.staticKey]?.record.identity == record.identity
    }

    /// Inserts `record` as present, or replaces (and so revives) its member's entry in place (its identity binding
    /// must have been checked: see ``holdsIdentity(of:)``); `introducer` is the member whose word it is, while its own member has not connected here (see ``Entry/introducer``).
    mutating func insert(_ record: MemberRecord, introducer: X25519PublicKey? = nil) {
        if entries[record.staticKey] == nil { order.append(record.staticKey) }
        entries[record.staticKey] = Entry(record: record, present: true, introducer: introducer)
    }

    /// Member `key` completed a handshake here: its record is no longer its introducer's claim.
    mutating func confirm(_ key: X25519PublicKey) {
        entries[key]?.introducer = nil
    }

    /// Member `key` announced its departure: its entry stays, as departed (a later join revives it).
    mutating func markDeparted(_ key: X25519PublicKey) {
        entries[key]?.present = false
    }
}
