import HuddleProtocol

/// How long a ``SessionMachine``'s local waits last. These are a node's own policy, not the wire's: two members with
/// different timings interoperate.
public struct SessionTiming: Sendable, Equatable {
    /// How long after the session core first needs a schedule set up (a joiner's first retry, an unreachable
    /// member's first redial; ``SessionCore/needsScheduling``) its timeout runs: 1 s, as the engine's former
    /// once-a-second housekeeping ran it. The simulator's schedule exploration also runs it at once.
    public var schedulingDelay: Duration = .seconds(1)
    /// How long joining waits for a WELCOME before giving up: 30 s.
    public var joinTimeout: Duration = .seconds(30)
    /// How long a departing node waits for its announcement (and what else is in flight) to be acknowledged before
    /// it closes its connections: 2 s.
    public var departureTimeout: Duration = .seconds(2)
    /// How long a node holds input back for an application that has not subscribed yet, before what nobody subscribed
    /// to may be dropped: 3 s, long enough for an app that starts reading right after joining on a loaded machine.
    public var subscriberWait: Duration = .seconds(3)

    /// The defaults above.
    public init() {}
}
