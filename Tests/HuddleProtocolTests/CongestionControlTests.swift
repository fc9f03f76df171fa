import Testing

@testable import HuddleProtocol

@Suite("Congestion control")
struct CongestionControlTests {
    static let datagram = 1200

    /// Acknowledges one full window per round trip, `rounds` times, starting at `start`.
    static func ackClock(
        _ controller: inout some CongestionController, rounds: Int, rtt: Duration, start: Instant,
        rttEstimator: RTTEstimator
    ) -> Instant {
        var now = start
        for _ in 0..<rounds {
            let sent = now
            now = now + rtt
            var remaining = controller.congestionWindow
            while remaining > 0 {
                let chunk = min(remaining, datagram)
                controller.onAcknowledged(bytes: chunk, sentTime: sent, rtt: rttEstimator, now: now)
                remaining -= chunk
            }
        }
        return now
    }

    static func estimator(_ rtt: Duration) -> RTTEstimator {
        var estimator = RTTEstimator()
        estimator.update(sample: rtt, ackDelay: .zero)
        return estimator
    }

    @Test("Initial and minimum windows follow RFC 9002 §7.2")
    func windows() {
        #expect(CongestionWindowLimits.initialWindow(maxDatagramSize: 1200) == 12_000)
        #expect(CongestionWindowLimits.initialWindow(maxDatagramSize: 1472) == 14_720)
        #expect(CongestionWindowLimits.initialWindow(maxDatagramSize: 9000) == 18_000)
        #expect(CongestionWindowLimits.minimumWindow(maxDatagramSize: 1200) == 2400)
        #expect(NewReno(maxDatagramSize: 1200).congestionWindow == 12_000)
        #expect(Cubic(maxDatagramSize: 1200).congestionWindow == 12_000)
    }

    @Test("NewReno doubles per round trip in slow start, halves once per recovery period, then grows linearly")
    func newReno() {
        var reno = NewReno(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(50))
        var now = Self.ackClock(&reno, rounds: 3, rtt: .milliseconds(50), start: .zero, rttEstimator: rtt)
        #expect(reno.congestionWindow == 96_000)
        #expect(reno.isInSlowStart)

        reno.onCongestionEvent(sentTime: now - .milliseconds(10), now: now)
        #expect(reno.congestionWindow == 48_000)
        #expect(!reno.isInSlowStart)
        // A second loss from the same flight is part of the same recovery period.
        reno.onCongestionEvent(sentTime: now - .milliseconds(5), now: now + .milliseconds(1))
        #expect(reno.congestionWindow == 48_000)
        // Acks for packets sent before recovery began do not grow the window.
        reno.onAcknowledged(bytes: 48_000, sentTime: now - .milliseconds(1), rtt: rtt, now: now + .milliseconds(2))
        #expect(reno.congestionWindow == 48_000)

        now = now + .milliseconds(1)
        now = Self.ackClock(&reno, rounds: 4, rtt: .milliseconds(50), start: now, rttEstimator: rtt)
        #expect(reno.congestionWindow == 48_000 + 4 * Self.datagram)

        reno.onPersistentCongestion(now: now)
        #expect(reno.congestionWindow == 2400)
    }

    @Test("NewReno never goes below the minimum window")
    func newRenoFloor() {
        var reno = NewReno(maxDatagramSize: Self.datagram)
        var now = Instant.zero
        for _ in 0..<20 {
            now = now + .milliseconds(100)
            reno.onCongestionEvent(sentTime: now, now: now + .milliseconds(1))
            now = now + .milliseconds(1)
        }
        #expect(reno.congestionWindow == 2400)
    }

    @Test("CUBIC reduces by beta = 0.7 and returns to the previous maximum after about K seconds")
    func cubicRecovery() {
        var cubic = Cubic(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(100))
        // Grow to 100 segments in slow start.
        var now = Instant.zero
        while cubic.congestionWindow < 100 * Self.datagram {
            now = now + .milliseconds(1)
            cubic.onAcknowledged(bytes: Self.datagram, sentTime: now, rtt: rtt, now: now)
        }
        let before = cubic.congestionWindow
        now = now + .milliseconds(10)
        cubic.onCongestionEvent(sentTime: now - .milliseconds(1), now: now)
        #expect(cubic.congestionWindow == Int(Double(before) * 0.7))
        #expect(!cubic.isInSlowStart)

        // K = cbrt(W_max (1 - beta) / C) = cbrt(100 * 0.3 / 0.4) ~ 4.2 s.
        let k = Cubic.cubeRoot(Double(before) / Double(Self.datagram) * 0.3 / 0.4)
        #expect(abs(k - 4.217) < 0.01)
        let roundsToK = Int((k / 0.1).rounded())
        let atK = Self.ackClock(&cubic, rounds: roundsToK, rtt: .milliseconds(100), start: now, rttEstimator: rtt)
        let windowAtK = Double(cubic.congestionWindow) / Double(before)
        #expect(windowAtK > 0.93 && windowAtK < 1.07, "window at K is \(windowAtK) of the old maximum")

        // Concave approach: growth in the last second before K is smaller than in the first second after the loss.
        _ = Self.ackClock(&cubic, rounds: 30, rtt: .milliseconds(100), start: atK, rttEstimator: rtt)
        #expect(Double(cubic.congestionWindow) > Double(before) * 1.1, "convex growth beyond the old maximum")
    }

    @Test("CUBIC applies fast convergence when the maximum shrinks")
    func cubicFastConvergence() {
        var cubic = Cubic(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(100))
        var now = Instant.zero
        while cubic.congestionWindow < 1000 * Self.datagram {
            now = now + .milliseconds(1)
            cubic.onAcknowledged(bytes: Self.datagram, sentTime: now, rtt: rtt, now: now)
        }
        now = now + .milliseconds(10)
        cubic.onCongestionEvent(sentTime: now - .milliseconds(1), now: now)
        let afterFirst = cubic.congestionWindow
        now = now + .milliseconds(200)
        cubic.onCongestionEvent(sentTime: now - .milliseconds(1), now: now)
        #expect(cubic.congestionWindow == Int(Double(afterFirst) * 0.7))
        // Without the window returning to its old maximum, the second loss plateau is lower: after K' seconds the
        // window is near 0.85 x afterFirst, not afterFirst. (1000 segments keep the curve out of the Reno-friendly
        // region, where the Reno estimate would dominate.)
        let kPrime = Cubic.cubeRoot(Double(afterFirst) / Double(Self.datagram) * (1.7 / 2 - 0.7) / 0.4)
        _ = Self.ackClock(
            &cubic, rounds: Int((kPrime / 0.1).rounded()), rtt: .milliseconds(100), start: now, rttEstimator: rtt)
        let ratio = Double(cubic.congestionWindow) / Double(afterFirst)
        #expect(ratio > 0.78 && ratio < 0.95, "plateau ratio \(ratio)")
    }

    @Test("CUBIC is at least as fast as Reno on a short round trip (Reno-friendly region)")
    func cubicRenoFriendly() {
        var cubic = Cubic(maxDatagramSize: Self.datagram)
        var reno = NewReno(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(1))
        cubic.onCongestionEvent(sentTime: .zero, now: .zero + .milliseconds(1))
        reno.onCongestionEvent(sentTime: .zero, now: .zero + .milliseconds(1))
        let start = Instant.zero + .milliseconds(2)
        _ = Self.ackClock(&cubic, rounds: 200, rtt: .milliseconds(1), start: start, rttEstimator: rtt)
        _ = Self.ackClock(&reno, rounds: 200, rtt: .milliseconds(1), start: start, rttEstimator: rtt)
        #expect(cubic.congestionWindow >= reno.congestionWindow * 9 / 10)
    }

    @Test("NewReno undoes a spurious congestion event: window and slow-start threshold come back, once")
    func newRenoUndo() {
        var reno = NewReno(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(50))
        let now = Self.ackClock(&reno, rounds: 3, rtt: .milliseconds(50), start: .zero, rttEstimator: rtt)
        #expect(reno.congestionWindow == 96_000)
        reno.onCongestionEvent(sentTime: now - .milliseconds(10), now: now)
        #expect(reno.congestionWindow == 48_000)
        reno.onSpuriousCongestionEvent()
        #expect(reno.congestionWindow == 96_000)
        #expect(reno.isInSlowStart)
        // Out of recovery again: a loss of a packet sent before the undone event counts again.
        reno.onCongestionEvent(sentTime: now - .milliseconds(5), now: now + .milliseconds(1))
        #expect(reno.congestionWindow == 48_000)
        // Nothing saved any more after persistent congestion.
        reno.onPersistentCongestion(now: now + .milliseconds(2))
        reno.onSpuriousCongestionEvent()
        #expect(reno.congestionWindow == 2400)
    }

    @Test("CUBIC undoes a spurious congestion event as if it had never happened")
    func cubicUndo() {
        let rtt = Self.estimator(.milliseconds(50))
        var cubic = Cubic(maxDatagramSize: Self.datagram)
        var now = Self.ackClock(&cubic, rounds: 3, rtt: .milliseconds(50), start: .zero, rttEstimator: rtt)
        // A real loss first, so the curve (W_max, K, epoch) is in use.
        cubic.onCongestionEvent(sentTime: now - .milliseconds(10), now: now)
        now = Self.ackClock(&cubic, rounds: 5, rtt: .milliseconds(50), start: now, rttEstimator: rtt)
        var untouched = cubic
        let before = cubic.congestionWindow

        cubic.onCongestionEvent(sentTime: now - .milliseconds(10), now: now)
        #expect(cubic.congestionWindow < before)
        cubic.onSpuriousCongestionEvent()
        #expect(cubic.congestionWindow == before)
        #expect(cubic.slowStartThreshold == untouched.slowStartThreshold)
        // From here on it grows exactly like a controller that never saw the event.
        let end = Self.ackClock(&cubic, rounds: 5, rtt: .milliseconds(50), start: now, rttEstimator: rtt)
        _ = Self.ackClock(&untouched, rounds: 5, rtt: .milliseconds(50), start: now, rttEstimator: rtt)
        #expect(cubic.congestionWindow == untouched.congestionWindow)
        // A second undo has nothing to restore.
        let grown = cubic.congestionWindow
        cubic.onSpuriousCongestionEvent()
        #expect(cubic.congestionWindow == grown)
        // Nor does one after persistent congestion.
        cubic.onCongestionEvent(sentTime: end, now: end + .milliseconds(1))
        cubic.onPersistentCongestion(now: end + .milliseconds(1))
        cubic.onSpuriousCongestionEvent()
        #expect(cubic.congestionWindow == 2400)
    }

    @Test("An undo never shrinks a window that grew past the saved one")
    func undoNeverShrinks() {
        var reno = NewReno(maxDatagramSize: Self.datagram)
        let rtt = Self.estimator(.milliseconds(50))
        var now = Self.ackClock(&reno, rounds: 1, rtt: .milliseconds(50), start: .zero, rttEstimator: rtt)
        #expect(reno.congestionWindow == 24_000)
        reno.onCongestionEvent(sentTime: now - .milliseconds(10), now: now)
        #expect(reno.congestionWindow == 12_000)
        // Congestion avoidance for long enough to pass 24,000 bytes again.
        now = now + .milliseconds(1)
        now = Self.ackClock(&reno, rounds: 11, rtt: .milliseconds(50), start: now, rttEstimator: rtt)
        #expect(reno.congestionWindow == 25_200)
        reno.onSpuriousCongestionEvent()
        #expect(reno.congestionWindow == 25_200)
    }
}
