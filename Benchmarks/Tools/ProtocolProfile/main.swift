import InMemoryTransfer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A plain executable around the benchmark's transfer, for `perf record` and for CPU time finer than the benchmark
// runner's (which rounds CPU time to the scheduler tick): `ProtocolProfile [transfers] [loss]`.
let arguments = CommandLine.arguments
let transfers = arguments.count > 1 ? Int(arguments[1]) ?? 20 : 20
let loss = arguments.count > 2 ? Double(arguments[2]) ?? 0 : 0
let bytes = 8 * 1024 * 1024

func processCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

var samples: [Double] = []
for _ in 0..<transfers {
    let start = processCPUSeconds()
    let moved = try InMemoryTransfer.run(bytes: bytes, lossRate: loss, seed: 7)
    samples.append(processCPUSeconds() - start)
    precondition(moved == bytes, "transfer delivered \(moved) of \(bytes) bytes")
}
samples.sort()
let median = samples[samples.count / 2]
let best = samples[0]
func show(_ seconds: Double) -> String {
    let milliseconds = (seconds * 10_000).rounded() / 10
    let megabytes = (Double(bytes) / 1e6 / seconds).rounded()
    return "\(milliseconds) ms (\(Int(megabytes)) MB/CPU-s)"
}
print("loss \(loss): \(transfers) transfers of 8 MiB; CPU per transfer: median \(show(median)), best \(show(best))")
