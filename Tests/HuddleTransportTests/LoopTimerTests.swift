import HuddleProtocol
import NIOCore
import NIOEmbedded
import Testing

@testable import HuddleTransport

/// The driver's one timer, on an embedded event loop whose time the test moves.
@Suite("The driver's loop timer")
struct LoopTimerTests {
    @Test("A later deadline keeps the armed timer; an earlier one replaces it; it fires once, at its deadline")
    func keepsTheEarliest() {
        let loop = EmbeddedEventLoop()
        let clock = DriverClock()
        var timer = LoopTimer()
        var fired: [String] = []
        timer.arm(at: Instant(nanoseconds: 2_000_000_000), clock: clock, on: loop) { fired.append("2 s") }
        timer.arm(at: Instant(nanoseconds: 3_000_000_000), clock: clock, on: loop) { fired.append("3 s") }
        #expect(timer.armedDeadline == Instant(nanoseconds: 2_000_000_000), "a later deadline keeps the timer")
        timer.arm(at: Instant(nanoseconds: 1_000_000_000), clock: clock, on: loop) { fired.append("1 s") }
        #expect(timer.armedDeadline == Instant(nanoseconds: 1_000_000_000))
        loop.advanceTime(to: clock.deadline(for: Instant(nanoseconds: 999_000_000)))
        #expect(fired.isEmpty)
        loop.advanceTime(to: clock.deadline(for: Instant(nanoseconds: 1_000_000_000)))
        #expect(fired == ["1 s"])
        timer.fired()
        #expect(timer.armedDeadline == nil)
        loop.advanceTime(to: clock.deadline(for: Instant(nanoseconds: 5_000_000_000)))
        #expect(fired == ["1 s"], "the replaced timer never fires")
    }

    @Test("A cancelled timer does not fire, and the next deadline arms a new one")
    func cancels() {
        let loop = EmbeddedEventLoop()
        let clock = DriverClock()
        var timer = LoopTimer()
        var fired = 0
        timer.arm(at: Instant(nanoseconds: 1_000_000), clock: clock, on: loop) { fired += 1 }
        timer.cancel()
        #expect(timer.armedDeadline == nil)
        timer.arm(at: Instant(nanoseconds: 5_000_000), clock: clock, on: loop) { fired += 10 }
        loop.advanceTime(to: clock.deadline(for: Instant(nanoseconds: 10_000_000)))
        #expect(fired == 10)
    }
}
