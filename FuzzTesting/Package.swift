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
            dependencies: [.product(name: "HuddleWire", package: "Huddle")]
        )
    ],
    swiftLanguageModes: [.v6]
)
