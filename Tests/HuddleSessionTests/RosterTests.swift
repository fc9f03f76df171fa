import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import Testing

@testable import HuddleSession

/// ``Roster``, the member entries of ``SessionMembership``, on its own: its bounds at their limits.
@Suite("Roster")
struct RosterTests {
    /// A member record whose identity is derived from `seed`, joined at `epoch`.
    static func record(_ seed: UInt64, epoch: UInt64 = 1) -> MemberRecord {
        var random = ChaChaRandomGenerator(seed: seed)
        return MemberRecord(
            identity: Identity(using: &random).publicIdentity, name: "member \(seed)",
            addresses: [EndpointPair.address(UInt8(truncatingIfNeeded: seed))], epoch: epoch)
    }

    /// A roster holding as many present members as the limit allows beside the local node's own record.
    static func fullRoster() -> (Roster, [MemberRecord]) {
        var roster = Roster()
        let records = (0..<UInt64(ProtocolLimits.maxRosterEntries - 1)).map { record($0 + 1) }
        for record in records {
            let room = roster.makeRoom()
            #expect(room)
            roster.insert(record)
        }
        return (roster, records)
    }

    @Test("At its limit (with the local node's place) a roster of present members has no room and forgets nobody")
    func limit() {
        var (roster, records) = Self.fullRoster()
        #expect(roster.count == ProtocolLimits.maxRosterEntries - 1)
        let room = roster.makeRoom()
        #expect(!room)
        #expect(roster.count == ProtocolLimits.maxRosterEntries - 1)
        #expect(roster.records == records)
        // One place below the limit there is room without forgetting a departed entry.
        var below = Roster()
        for record in records.dropLast() { below.insert(record) }
        below.markDeparted(records[0].staticKey)
        let roomBelow = below.makeRoom()
        #expect(roomBelow && below.contains(records[0].staticKey))
    }

    @Test("Making room forgets the oldest departed entry in join order, not the one that departed last")
    func makeRoomEvictsOldestDeparted() {
        var (roster, records) = Self.fullRoster()
        roster.markDeparted(records[10].staticKey)
        roster.markDeparted(records[3].staticKey)
        let first = roster.makeRoom()
        #expect(first)
        #expect(!roster.contains(records[3].staticKey) && roster.contains(records[10].staticKey))
        #expect(!roster.order.contains(records[3].staticKey))
        roster.insert(Self.record(1_000))
        let second = roster.makeRoom()
        #expect(second)
        #expect(!roster.contains(records[10].staticKey))
        roster.insert(Self.record(1_001))
        let third = roster.makeRoom()
        #expect(!third)
        #expect(roster.count == ProtocolLimits.maxRosterEntries - 1)
    }

    @Test("A departed member that joins again is revived in its place in join order, with its new record")
    func reviveKeepsPlace() {
        var roster = Roster()
        let (ana, ben, cy) = (Self.record(1), Self.record(2), Self.record(3))
        for record in [ana, ben, cy] { roster.insert(record) }
        roster.markDeparted(ben.staticKey)
        #expect(roster.records == [ana, cy] && roster.record(ben.staticKey) == nil)
        #expect(roster.contains(ben.staticKey) && !roster.isPresent(ben.staticKey))
        var rejoined = ben
        rejoined.epoch = 7
        roster.insert(rejoined)
        #expect(roster.records == [ana, rejoined, cy])
        #expect(roster.order == [ana.staticKey, ben.staticKey, cy.staticKey])
    }

    @Test("Only a later join is news: the same record again or an older one is not, also for a departed member")
    func newerRecords() {
        var roster = Roster()
        let ana = Self.record(1, epoch: 5)
        #expect(roster.isNewer(ana))
        roster.insert(ana)
        #expect(!roster.isNewer(ana))
        #expect(!roster.isNewer(Self.record(1, epoch: 4)))
        roster.markDeparted(ana.staticKey)
        #expect(!roster.isNewer(ana))
        #expect(roster.isNewer(Self.record(1, epoch: 6)))
    }

    @Test("An introducer has at most the bound of unconfirmed records; confirming or a departure frees a place")
    func unconfirmedBound() {
        var roster = Roster()
        let (hostile, honest) = (Self.record(1).staticKey, Self.record(2).staticKey)
        let limit = ProtocolLimits.maxUnconfirmedMembersPerIntroducer
        let claimed = (0..<UInt64(limit)).map { Self.record(100 + $0) }
        for record in claimed {
            #expect(roster.mayIntroduce(by: hostile))
            roster.insert(record, introducer: hostile)
        }
        // Records from a WELCOME or the member itself are nobody's claim.
        roster.insert(Self.record(3))
        #expect(roster.unconfirmedCount(introducedBy: hostile) == limit)
        #expect(!roster.mayIntroduce(by: hostile) && roster.mayIntroduce(by: honest))
        roster.confirm(claimed[0].staticKey)
        #expect(roster.mayIntroduce(by: hostile))
        roster.insert(Self.record(200), introducer: hostile)
        #expect(!roster.mayIntroduce(by: hostile))
        roster.markDeparted(claimed[1].staticKey)
        #expect(roster.unconfirmedCount(introducedBy: hostile) == limit - 1)
        // A later record of the same member replaces the claim with the new introducer's.
        var again = claimed[2]
        again.epoch = 9
        roster.insert(again, introducer: honest)
        #expect(roster.unconfirmedCount(introducedBy: hostile) == limit - 2)
        #expect(roster.unconfirmedCount(introducedBy: honest) == 1)
    }

    @Test("Queries list present members in join order, excluding or among a set of keys")
    func queries() {
        var roster = Roster()
        let records = (1...4).map { Self.record(UInt64($0)) }
        for record in records { roster.insert(record) }
        roster.markDeparted(records[1].staticKey)
        let set: Set = [records[1].staticKey, records[2].staticKey]
        #expect(roster.presentKeys == [records[0], records[2], records[3]].map(\.staticKey))
        #expect(roster.records(excluding: set) == [records[0], records[3]])
        #expect(roster.records(among: set) == [records[2]])
        #expect(roster.entry(records[1].staticKey)?.present == false)
        #expect(roster.record(Self.record(9).staticKey) == nil && !roster.contains(Self.record(9).staticKey))
    }
}
