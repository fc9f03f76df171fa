import HuddleProtocol
import Testing

@Suite("Pacing (RFC 9002 §7.7)")
struct PacerTests {
    @Test("A full bucket allows a burst of 10 datagrams, then spaces packets at 1.25 x window / RTT")
    func burstThenSpacing() {
        var pacer = Pacer(maxDatagramSize: 1200)
        let window = 120_000
        let rtt = Duration.milliseconds(100)
        let now = Instant.zero
        for _ in 0..<10 {
            #expect(pacer.earliestSendTime(bytes: 1200, congestionWindow: window, smoothedRTT: rtt, now: now) == nil)
            pacer.onSent(bytes: 1200)
        }
        // Rate = 1.25 * 120000 B / 100 ms = 1.5 B/µs, so 1200 B take 800 µs.
        let next = pacer.earliestSendTime(bytes: 1200, congestionWindow: window, smoothedRTT: rtt, now: now)
        #expect(next == Instant.zero + .microseconds(800))
        #expect(
            pacer.earliestSendTime(
                bytes: 1200, congestionWindow: window, smoothedRTT: rtt, now: .zero + .microseconds(800))
                == nil)
    }

    @Test("Idle time never accumulates more than one burst: 2 ms at the rate, at most 64 datagrams")
    func boundedBurst() {
        var pacer = Pacer(maxDatagramSize: 1200)
        let rtt = Duration.milliseconds(10)
        _ = pacer.earliestSendTime(bytes: 1200, congestionWindow: 1_000_000, smoothedRTT: rtt, now: .zero)
        var sentWithoutWaiting = 0
        let later = Instant.zero + .seconds(60)
        while pacer.earliestSendTime(bytes: 1200, congestionWindow: 1_000_000, smoothedRTT: rtt, now: later) == nil {
            pacer.onSent(bytes: 1200)
            sentWithoutWaiting += 1
            if sentWithoutWaiting > 100 { break }
        }
        // 1.25 x 1 MB / 10 ms = 125 MB/s: 2 ms of it is 250 kB, more than the 64-datagram cap.
        #expect(sentWithoutWaiting == Pacer.maxBurstDatagrams)
        // At 12.5 MB/s, 2 ms is 25 kB: 20 datagrams.
        var slower = Pacer(maxDatagramSize: 1200)
        var released = 0
        while slower.earliestSendTime(bytes: 1200, bytesPerSecond: 12_500_000, congestionWindow: 1_000_000, now: later)
            == nil
        {
            slower.onSent(bytes: 1200)
            released += 1
            if released > 100 { break }
        }
        #expect(released == 10, "a new pacer starts with the minimum burst")
        let refilled = later + .seconds(1)
        released = 0
        while slower.earliestSendTime(
            bytes: 1200, bytesPerSecond: 12_500_000, congestionWindow: 1_000_000, now: refilled) == nil
        {
            slower.onSent(bytes: 1200)
            released += 1
            if released > 100 { break }
        }
        #expect(released == 20)
    }

    @Test("Over one round trip the pacer releases about 1.25 windows")
    func rateOverARoundTrip() {
        var pacer = Pacer(maxDatagramSize: 1200)
        let window = 60_000
        let rtt = Duration.milliseconds(50)
        var now = Instant.zero
        var sent = 0
        let end = Instant.zero + rtt
        while now < end {
            if let wait = pacer.earliestSendTime(bytes: 1200, congestionWindow: window, smoothedRTT: rtt, now: now) {
                now = wait
                continue
            }
            pacer.onSent(bytes: 1200)
            sent += 1200
        }
        let ratio = Double(sent) / Double(window)
        #expect(ratio > 1.2 && ratio < 1.5, "released \(ratio) windows in one RTT (burst included)")
    }

    @Test("An empty bucket on a fast path waits for 250 µs of tokens and then releases them as one batch")
    func releasesBatchesOnFastPaths() {
        // 120 MB/s: 250 µs is 30,000 bytes, 25 datagrams of 1,200, under the 64-datagram bucket.
        let rate = 120_000_000.0
        var pacer = Pacer(maxDatagramSize: 1200)
        var now = Instant.zero
        func burst() -> Int {
            var sent = 0
            while pacer.earliestSendTime(bytes: 1200, bytesPerSecond: rate, congestionWindow: 10_000_000, now: now)
                == nil
            {
                pacer.onSent(bytes: 1200)
                sent += 1
                if sent > 100 { break }
            }
            return sent
        }
        #expect(burst() == Pacer.burstDatagrams)
        let release = pacer.earliestSendTime(bytes: 1200, bytesPerSecond: rate, congestionWindow: 10_000_000, now: now)
        #expect(release == now + .microseconds(250), "one datagram's tokens take 10 µs; the pacer waits for 25")
        now = release!
        #expect(burst() == 25)

        // A window smaller than the batch bounds it: the bucket never holds more than the window.
        var windowed = Pacer(maxDatagramSize: 1200)
        while windowed.earliestSendTime(bytes: 1200, bytesPerSecond: rate, congestionWindow: 3_600, now: .zero) == nil {
            windowed.onSent(bytes: 1200)
        }
        #expect(
            windowed.earliestSendTime(bytes: 1200, bytesPerSecond: rate, congestionWindow: 3_600, now: .zero)
                == .zero + .microseconds(30), "3,600 bytes at 120 MB/s")

        // A slow path keeps its spacing: at 1.2 MB/s a datagram takes 1 ms, more than the granularity.
        var slow = Pacer(maxDatagramSize: 1200)
        while slow.earliestSendTime(bytes: 1200, bytesPerSecond: 1_200_000, congestionWindow: 100_000, now: .zero)
            == nil
        {
            slow.onSent(bytes: 1200)
        }
        let slowRelease = slow.earliestSendTime(
            bytes: 1200, bytesPerSecond: 1_200_000, congestionWindow: 100_000, now: .zero)
        // Rounded up to the next nanosecond after the floating-point rate.
        #expect(slowRelease.map { ($0 - .zero) >= .milliseconds(1) && ($0 - .zero) <= .microseconds(1_001) } == true)
    }
}
