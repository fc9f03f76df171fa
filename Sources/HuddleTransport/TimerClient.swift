import HuddleProtocol

/// Timers of a layer above the endpoint (the session and journal cores) that run on the driver's one event-loop
/// timer instead of a polling task of their own.
///
/// After every input the driver arms its timer at the earlier of ``Endpoint/nextDeadline`` and ``deadline``; when the
/// timer fires and ``deadline`` has passed, it calls ``fire`` on the event loop with exclusive access to the
/// endpoint, then sends whatever that queued. An idle node therefore wakes only when some timer is due.
public struct TimerClient: Sendable {
    /// The earliest instant the client has work at, given the current instant, or `nil` for none. Called on the
    /// event loop after every input: keep it cheap.
    public var deadline: @Sendable (_ now: Instant) -> Instant?
    /// Runs the client's due timers at `now`.
    public var fire: @Sendable (_ endpoint: inout Endpoint, _ now: Instant) -> Void

    /// A client with its deadline and its timer work.
    public init(
        deadline: @escaping @Sendable (_ now: Instant) -> Instant?,
        fire: @escaping @Sendable (_ endpoint: inout Endpoint, _ now: Instant) -> Void
    ) {
        self.deadline = deadline
        self.fire = fire
    }
}
