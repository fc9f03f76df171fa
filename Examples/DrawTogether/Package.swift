// swift-tools-version: 6.1
// DrawTogether: Apple's GroupActivities sample (WWDC21 "Build custom experiences with Group Activities") on Huddle,
// drawn in a browser. Its own package, so the Huddle library never depends on a web stack.
import PackageDescription

let package = Package(
    name: "DrawTogether",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Huddle", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "DrawTogether",
            dependencies: [
                .product(name: "Huddle", package: "Huddle"),
                .product(name: "HuddleServiceLifecycle", package: "Huddle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
