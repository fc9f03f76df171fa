import HuddleProtocol
import NIOCore

/// The driver's one timer on its event loop, armed at or before the earliest deadline of the endpoint and of the
/// layer above.
///
/// A timer armed earlier than needed is kept: firing early is harmless (``Endpoint/handleTimeout(now:)`` runs only
/// what is due), and keeping it avoids re-scheduling after every read batch, which would cost a heap operation in
/// the event loop per batch.
struct LoopTimer {
    private var scheduled: Scheduled<Void>?
    /// The instant the armed timer fires at, if one is armed.
    private(set) var armedDeadline: Instant?

    /// Arms the timer for `deadline` on `loop` unless it is already armed at or before it; `fire` runs then.
    mutating func arm(
        at deadline: Instant, clock: DriverClock, on loop: any EventLoop, fire: @escaping () -> Void
    ) {
        if let armed = armedDeadline, armed <= deadline { return }
        scheduled?.cancel()
        armedDeadline = deadline
        scheduled = loop.assumeIsolated().scheduleTask(deadline: clock.deadline(for: deadline)) { fire() }
    }

    /// Forgets the timer that just fired, so the next ``arm(at:clock:on:fire:)`` schedules anew.
    mutating func fired() {
        scheduled = nil
        armedDeadline = nil
    }

    /// Cancels the armed timer, if any.
    mutating func cancel() {
        scheduled?.cancel()
        fired()
    }
}
