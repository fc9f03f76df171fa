import Benchmark
import Foundation
import HuddleCrypto

/// `HUDDLE_BENCH_SMOKE=1` (set by `make bench-smoke`, part of `make test`) runs each benchmark for a moment only,
/// to check that the suite works; the figures are then meaningless.
let smoke = ProcessInfo.processInfo.environment["HUDDLE_BENCH_SMOKE"] != nil

/// Throughput of the primitives on the per-packet path: ChaCha20-Poly1305 seal and open in place (one transport
/// packet of 1200 bytes, one 64 KiB journal chunk) and BLAKE2b-256 over a 64 KiB chunk (Merkle leaves).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .cpuTotal, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )
    if smoke {
        Benchmark.defaultConfiguration.maxDuration = .milliseconds(200)
        Benchmark.defaultConfiguration.maxIterations = 3
    }

    for size in [1200, 65536] {
        Benchmark("ChaCha20-Poly1305 seal in place \(size) B") { benchmark in
            let key = try SymmetricKey(bytes: [UInt8](repeating: 7, count: 32))
            var buffer = [UInt8](repeating: 0xA5, count: size + ChaChaPoly.tagLength)
            let header = [UInt8](repeating: 1, count: 16)
            benchmark.startMeasurement()
            for iteration in benchmark.scaledIterations {
                buffer.withUnsafeMutableBytes { raw in
                    header.withUnsafeBytes { ad in
                        _ = ChaChaPoly.sealInPlace(
                            combined: raw, plaintextLength: size, nonce: .init(counter: UInt64(iteration)),
                            authenticating: ad, key: key)
                    }
                }
            }
            blackHole(buffer)
        }

        Benchmark("ChaCha20-Poly1305 open in place \(size) B") { benchmark in
            let key = try SymmetricKey(bytes: [UInt8](repeating: 7, count: 32))
            let header = [UInt8](repeating: 1, count: 16)
            let sealed = ChaChaPoly.seal(
                [UInt8](repeating: 0xA5, count: size), counter: 1, authenticating: header, key: key)
            var buffer = sealed
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                // Opening in place overwrites the ciphertext, so each iteration restores it first; the copy is
                // memcpy-speed and small next to the cipher work.
                buffer.withUnsafeMutableBytes { target in sealed.withUnsafeBytes { target.copyMemory(from: $0) } }
                let length = try buffer.withUnsafeMutableBytes { raw in
                    try header.withUnsafeBytes { ad in
                        try ChaChaPoly.openInPlace(
                            combined: raw, nonce: .init(counter: 1), authenticating: ad, key: key)
                    }
                }
                blackHole(length)
            }
        }
    }

    Benchmark("BLAKE2b-256 65536 B") { benchmark in
        let chunk = [UInt8](repeating: 0x5A, count: 65536)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(BLAKE2b.hash(chunk, outputLength: 32))
        }
    }
}
