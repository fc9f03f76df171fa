import Foundation

/// The sessions heard nearby recently, as a value: ``heard(_:at:)`` adds or refreshes one, ``expire(now:)`` drops
/// those whose announcements stopped. Keyed by ticket, so two members announcing one session are two entries (each
/// is a way in), and one member's repeats are one.
struct NearbyList: Sendable {
    /// How long a session stays listed after its last announcement: three missed beacons.
    static let staleAfter: Duration = .seconds(3)
    /// The most sessions listed; a newly heard one beyond it replaces the one heard least recently (the segment is
    /// shared with strangers, who could announce without end).
    static let maxSessions = 64

    private var entries: [String: (session: NearbySession, lastHeard: ContinuousClock.Instant)] = [:]

    /// The sessions listed, by name.
    var sessions: [NearbySession] {
        entries.values.sorted { $0.session.name < $1.session.name }.map(\.session)
    }

    /// Records `session` as heard at `now`; whether the list changed (a session that was not listed).
    mutating func heard(_ session: NearbySession, at now: ContinuousClock.Instant) -> Bool {
        let key = session.invitation.ticket
        let isNew = entries[key] == nil
        if isNew, entries.count >= Self.maxSessions,
            let oldest = entries.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key
        {
            entries[oldest] = nil
        }
        entries[key] = (session, now)
        return isNew
    }

    /// Drops sessions not heard for ``staleAfter`` or whose ticket expired; whether the list changed.
    mutating func expire(now: ContinuousClock.Instant, date: Date = Date()) -> Bool {
        let before = entries.count
        entries = entries.filter {
            now - $0.value.lastHeard < Self.staleAfter && !$0.value.session.invitation.isExpired(at: date)
        }
        return entries.count != before
    }
}
