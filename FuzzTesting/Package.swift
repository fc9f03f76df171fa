// swift-tools-version: 6.1
// Fuzz targets for Huddle's parsers of untrusted bytes, kept out of the root package so that sanitizer
// builds never touch benchmarks or the CLI. See run-smoke.sh and docs/PROTOCOL.md.
import PackageDescription

let package = Package(
    name: "FuzzTesting",
    dependencies: [
        .package(name: "Huddle", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "WireFuzzer",
            dependencies: ["FuzzTargets", .product(name: "HuddleWire", package: "Huddle")]
        ),
        .target(
            name: "FuzzTargets",
            dependencies: [
                .product(name: "Huddle", package: "Huddle"),
                .product(name: "HuddleProtocol", package: "Huddle"),
                .product(name: "HuddleSession", package: "Huddle"),
                .product(name: "HuddleCrypto", package: "Huddle"),
                .product(name: "HuddleTransport", package: "Huddle"),
                .product(name: "HuddleTestKit", package: "Huddle"),
                .product(name: "HuddleWire", package: "Huddle"),
            ]
        ),
        .executableTarget(name: "MembershipFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "JournalMessageFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "ManifestFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "EnvelopeFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "ActivityFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "TicketFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "IdentityFileFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "SessionStateFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "NearbyBeaconFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "HandshakeFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "HandshakeReplyFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "TurnFuzzer", dependencies: ["FuzzTargets"]),
        .executableTarget(name: "PortMappingFuzzer", dependencies: ["FuzzTargets"]),
    ],
    swiftLanguageModes: [.v6]
)
