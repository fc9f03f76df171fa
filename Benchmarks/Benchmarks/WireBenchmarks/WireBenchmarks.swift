import Benchmark
import Foundation
import HuddleWire

/// `HUDDLE_BENCH_SMOKE=1` (set by `make bench-smoke`, part of `make test`) runs each benchmark for a moment only,
/// to check that the suite works; the figures are then meaningless.
let smoke = ProcessInfo.processInfo.environment["HUDDLE_BENCH_SMOKE"] != nil

/// The wire codecs on the hot path: a full 1200-byte packet's frames (an ACK with 8 ranges and a MESSAGE fragment
/// of 1,100 bytes) encoded into a reused buffer, and the same payload decoded. Zero allocations are expected for
/// encoding; decoding allocates only the frames array.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )
    if smoke {
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
        Benchmark.defaultConfiguration.maxIterations = 3
    }
    let ranges = try! AckRanges(
        descending: (0..<8).map { index in
            let high = UInt64(10_000 - index * 20)
            return (high - 9)...high
        })
    let ack = AckFrame(ackDelay: 250, ranges: ranges)
    let body = [UInt8](repeating: 0xA5, count: 1_100)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1_200, alignment: 16)
    var encodedLength = 0
    body.withUnsafeBytes { data in
        var writer = ByteWriter(buffer)
        let fragment = MessageFragment(
            channel: ChannelID(16), sequence: MessageSequence(41), offset: 0, totalLength: 1_100, data: data)
        try! Frame.ack(ack).encode(into: &writer)
        try! Frame.message(fragment).encode(into: &writer)
        encodedLength = writer.bytesWritten
    }
    let payload = Array(UnsafeRawBufferPointer(rebasing: buffer[0..<encodedLength]))

    Benchmark("Encode ACK (8 ranges) + MESSAGE (1,100 B) into a 1,200 B buffer") { benchmark in
        body.withUnsafeBytes { data in
            let fragment = MessageFragment(
                channel: ChannelID(16), sequence: MessageSequence(41), offset: 0, totalLength: 1_100, data: data)
            for _ in benchmark.scaledIterations {
                var writer = ByteWriter(buffer)
                try! Frame.ack(ack).encode(into: &writer)
                try! Frame.message(fragment).encode(into: &writer)
                blackHole(writer.bytesWritten)
            }
        }
    }

    Benchmark("Decode ACK (8 ranges) + MESSAGE (1,100 B), frame by frame") { benchmark in
        payload.withUnsafeBytes { raw in
            for _ in benchmark.scaledIterations {
                var decoder = FrameDecoder(raw)
                while let frame = try! decoder.next() { blackHole(frame) }
            }
        }
    }
}
