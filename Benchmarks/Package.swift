// swift-tools-version: 6.1
import PackageDescription

// A separate package so that fuzz and sanitizer builds of the root never build the benchmark plugin.
let package = Package(
    name: "HuddleBenchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "Huddle", path: "../"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "CryptoBenchmarks",
            dependencies: [
                .product(name: "HuddleCrypto", package: "Huddle"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/CryptoBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .target(
            name: "InMemoryTransfer",
            dependencies: [
                .product(name: "HuddleCrypto", package: "Huddle"),
                .product(name: "HuddleProtocol", package: "Huddle"),
                .product(name: "HuddleWire", package: "Huddle"),
            ],
            path: "Benchmarks/InMemoryTransfer"
        ),
        // Not under Benchmarks/: the benchmark plugin runs every executable there as a benchmark suite.
        .executableTarget(
            name: "ProtocolProfile",
            dependencies: ["InMemoryTransfer"],
            path: "Tools/ProtocolProfile"
        ),
        .executableTarget(
            name: "WireBenchmarks",
            dependencies: [
                .product(name: "HuddleWire", package: "Huddle"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/WireBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "LoopbackBenchmarks",
            dependencies: [
                .product(name: "Huddle", package: "Huddle"),
                .product(name: "HuddleCrypto", package: "Huddle"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LoopbackBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ProtocolBenchmarks",
            dependencies: [
                "InMemoryTransfer",
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/ProtocolBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
