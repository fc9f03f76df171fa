import HuddleProtocol

/// How a ``SimulatedNetwork`` bends the schedule its nodes see, the way a real event loop does: timers fire late (by
/// up to their granularity, or on the ticks of a coarse clock), datagrams wait in the socket until the loop reads them
/// and are then handled as one batch (every datagram reaches the endpoint before the session sees their events) or
/// one by one, and the session's pending schedules are set up at once instead of a second later.
///
/// None of this changes what a correct node may promise: the churn scenario's `churn-schedule` variant draws one
/// perturbation per seed (``explored(seed:)``) and runs every checker on it, so a guarantee that holds only under the
/// simulator's tidy default schedule fails a seed instead of a user.
public struct SchedulePerturbation: Sendable, CustomStringConvertible {
    /// How late a timer may fire after its deadline (each new deadline draws its lateness once, uniformly below
    /// this); zero: on time.
    public var timerLateness: Duration = .zero
    /// A coarse clock: timers fire at the first tick at or after their deadline (ticks `period` apart, the first at
    /// `phase`), as with a loop that wakes on a fixed tick. `nil`: no tick.
    public var tick: (period: Duration, phase: Duration)?
    /// How long a datagram may wait in its socket before the loop reads it: a read happens a uniform draw below this
    /// after the first datagram that found the node's socket empty, and takes everything that arrived by then.
    /// Zero: each datagram is read when it arrives.
    public var readDelay: Duration = .zero
    /// Whether a read hands its datagrams to the node as one batch (the transport driver's way) rather than one by
    /// one.
    public var mergesReads = false
    /// Whether the session machine sets up a pending schedule (a joiner's retry, an unreachable member's redial) at
    /// once instead of after ``SessionTiming/schedulingDelay``.
    public var schedulesAtOnce = false

    /// The simulator's own tidy schedule: nothing bent.
    public static let none = SchedulePerturbation()

    /// A perturbation drawn from `seed`: each dimension on or off, with its size drawn too. About one seed in eight
    /// keeps every dimension off, so the explored variant also covers the default schedule.
    public static func explored(seed: UInt64) -> SchedulePerturbation {
        var random = SimulationRandom(seed: seed ^ 0x5C4E_D01E)
        var schedule = SchedulePerturbation()
        if random.chance(0.5) {
            // Timer granularity: a millisecond (an idle loop), up to 20 ms (a loaded machine).
            let most = random.chance(0.7) ? 1000 : 20_000
            schedule.timerLateness = .microseconds(Int64(random.integer(in: 100...most)))
        }
        if random.chance(0.25) {
            let periodMicroseconds = 1000 * random.integer(in: 1...10)
            schedule.tick = (
                .microseconds(Int64(periodMicroseconds)),
                .microseconds(Int64(random.integer(in: 0...(periodMicroseconds - 1))))
            )
        }
        if random.chance(0.5) {
            let most = random.chance(0.7) ? 500 : 5000
            schedule.readDelay = .microseconds(Int64(random.integer(in: 50...most)))
            schedule.mergesReads = random.chance(0.7)
        }
        schedule.schedulesAtOnce = random.chance(0.5)
        return schedule
    }

    /// When a timer whose deadline is `deadline` fires, given its drawn `lateness`.
    func firing(of deadline: Instant, lateness: Duration) -> Instant {
        var due = deadline + lateness
        if let tick {
            let offset = (due - Instant.zero) - tick.phase
            let period = tick.period.nanoseconds
            let ticks = (offset.nanoseconds + period - 1).floorDivided(by: period)
            due = Instant.zero + tick.phase + .nanoseconds(ticks * period)
            if due < deadline { due = due + tick.period }
        }
        return due
    }

    /// What is bent, for failure messages ("default schedule" when nothing is).
    public var description: String {
        var parts: [String] = []
        if timerLateness > .zero { parts.append("timers up to \(timerLateness) late") }
        if let tick { parts.append("timers on a \(tick.period) tick at phase \(tick.phase)") }
        if readDelay > .zero {
            parts.append("reads up to \(readDelay) late, \(mergesReads ? "batched" : "one by one")")
        }
        if schedulesAtOnce { parts.append("schedules set up at once") }
        return parts.isEmpty ? "default schedule" : parts.joined(separator: ", ")
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
