// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Huddle",
    products: [
        .library(name: "HuddleCrypto", targets: ["HuddleCrypto"]),
        .library(name: "HuddleWire", targets: ["HuddleWire"]),
        .library(name: "HuddleProtocol", targets: ["HuddleProtocol"]),
        .library(name: "HuddleSession", targets: ["HuddleSession"]),
        .library(name: "HuddleTransport", targets: ["HuddleTransport"]),
        .library(name: "Huddle", targets: ["Huddle"]),
        // A node as a swift-service-lifecycle Service (graceful leave on SIGTERM), in a product of its own.
        .library(name: "HuddleServiceLifecycle", targets: ["HuddleServiceLifecycle"]),
        // The deterministic simulator and its nodes, for the stateful fuzzer (FuzzTesting) and downstream tests.
        .library(name: "HuddleTestKit", targets: ["HuddleTestKit"]),
        .executable(name: "huddle", targets: ["huddle"]),
        .executable(name: "huddle-sim", targets: ["huddle-sim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // Only the `huddle` executable uses it (`--metrics`): the library stays on swift-metrics alone.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Only HuddleServiceLifecycle uses it: apps that do not run a ServiceGroup do not link it.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // `swift package generate-documentation` (make docs): a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]
        ),
        .target(
            name: "HuddleCrypto",
            dependencies: ["CSodium", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .target(
            name: "HuddleWire"
        ),
        .target(
            name: "HuddleProtocol",
            dependencies: [
                "HuddleWire",
                "HuddleCrypto",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        // The sans-IO session layer above the transport protocol: membership, the journal, and the one type that
        // composes them with the endpoint (SessionMachine), which the engine and every simulator node drive alike.
        .target(
            name: "HuddleSession",
            dependencies: [
                "HuddleProtocol",
                "HuddleWire",
                "HuddleCrypto",
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "HuddleTransport",
            dependencies: [
                "HuddleProtocol",
                "HuddleCrypto",
                "HuddleWire",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "HuddleTestKit",
            dependencies: [
                "HuddleProtocol",
                "HuddleSession",
                "HuddleCrypto",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "Huddle",
            dependencies: [
                "HuddleTransport",
                "HuddleProtocol",
                "HuddleSession",
                "HuddleCrypto",
                "HuddleWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .target(
            name: "HuddleServiceLifecycle",
            dependencies: [
                "Huddle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "huddle",
            dependencies: [
                "Huddle",
                "HuddleProtocol",
                "HuddleSession",
                "HuddleTransport",
                "HuddleCrypto",
                "HuddleWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .executableTarget(
            name: "huddle-transport-bench",
            dependencies: [
                "HuddleTransport",
                "HuddleProtocol",
                "HuddleCrypto",
                "HuddleWire",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The README's Swift code, compiled by every build so it cannot rot: main.swift is the README's ```swift
        // blocks verbatim (scripts/check-readme.sh checks it in `make lint`). It depends on Huddle alone, which is
        // what the README promises an app needs. ReadmeExampleTests runs it.
        .executableTarget(
            name: "readme-snippets",
            dependencies: ["Huddle"],
            path: "Tests/ReadmeSnippets"
        ),
        .executableTarget(
            name: "huddle-sim",
            dependencies: [
                "HuddleTestKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "HuddleCryptoTests",
            dependencies: ["HuddleCrypto"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "HuddleTests",
            dependencies: [
                "Huddle", "HuddleTransport", "HuddleSession", "HuddleCLITestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "HuddleServiceLifecycleTests",
            dependencies: [
                "HuddleServiceLifecycle", "Huddle",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Drives `huddle` processes through pipes for the multi-process tests below. It only launches the executable
        // (found next to the test bundle), so it depends on no Huddle module.
        .target(
            name: "HuddleCLITestSupport",
            path: "Tests/HuddleCLITestSupport"
        ),
        .testTarget(
            name: "HuddleIntegrationTests",
            dependencies: [
                "Huddle", "HuddleCLITestSupport", "HuddleCrypto", "HuddleProtocol", "HuddleSession", "HuddleWire",
            ]
        ),
        .testTarget(
            name: "NetworkNamespaceTests",
            dependencies: ["Huddle", "HuddleCLITestSupport"]
        ),
        .testTarget(
            name: "HuddleProtocolTests",
            dependencies: ["HuddleProtocol", "HuddleTestKit"]
        ),
        .testTarget(
            name: "HuddleSessionTests",
            dependencies: ["HuddleSession", "HuddleProtocol", "HuddleTestKit"]
        ),
        .testTarget(
            name: "HuddleSimulationTests",
            dependencies: ["HuddleTestKit", "HuddleProtocol", "HuddleSession"],
            // The seed lists are read from the repository by #filePath (one copy), not bundled.
            exclude: ["seeds.txt", "churn-seeds.txt", "churn-schedule-seeds.txt"]
        ),
        .testTarget(
            name: "HuddleTransportTests",
            dependencies: [
                "HuddleTransport",
                "HuddleCLITestSupport",
                "HuddleProtocol",
                "HuddleCrypto",
                "HuddleWire",
                "HuddleTestKit",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "HuddleTestKitTests",
            dependencies: ["HuddleTestKit"]
        ),
        // Checks the Swift implementation against docs/vectors/*.json, written by the independent Python reference
        // in scripts/vectors (issue 19). The tests read the JSON from the repository by #filePath: one copy.
        .testTarget(
            name: "HuddleVectorTests",
            // `huddle` (the executable) for the CLI's own application types (cli.json).
            dependencies: ["Huddle", "HuddleProtocol", "HuddleSession", "HuddleCrypto", "HuddleWire", "huddle"]
        ),
        .testTarget(
            name: "HuddleWireTests",
            dependencies: [
                "HuddleWire",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// `make lint` and `make test` set HUDDLE_WARNINGS_AS_ERRORS: a warning in any of our own targets (the libraries, the
// tools, the tests) then fails the build. Not by default, so that a newer compiler's new warning cannot stop a
// newcomer's `make demo` or an app that depends on Huddle.
if Context.environment["HUDDLE_WARNINGS_AS_ERRORS"] != nil {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.treatAllWarnings(as: .error)]
    }
}
