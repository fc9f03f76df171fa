import Benchmark
import Foundation
import InMemoryTransfer

/// `HUDDLE_BENCH_SMOKE=1` (set by `make bench-smoke`, part of `make test`) runs each benchmark for a moment only,
/// to check that the suite works; the figures are then meaningless.
let smoke = ProcessInfo.processInfo.environment["HUDDLE_BENCH_SMOKE"] != nil

/// Bulk transfer through two protocol endpoints in memory: no sockets, no simulated latency, datagrams handed
/// straight across (optionally dropping 2 %). Every packet is encrypted, decrypted, acknowledged and
/// congestion-controlled, so this is the protocol core's cost per byte. Throughput is transfers per second; one
/// transfer is 8 MiB of 64 KiB messages, so MB per CPU-second = throughput x 8.39.
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .cpuTotal, .mallocCountTotal],
        maxDuration: .seconds(10),
        maxIterations: 20
    )
    if smoke {
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
        Benchmark.defaultConfiguration.maxIterations = 3
    }
    for loss in [0.0, 0.02] {
        Benchmark("Bulk 8 MiB through two endpoints in memory, \(Int(loss * 100)) % loss") { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(try InMemoryTransfer.run(bytes: 8 * 1024 * 1024, lossRate: loss, seed: 7))
            }
        }
    }
}
