// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "SketchTogether",
    dependencies: [
        // A clone of the Huddle repository, next to this package's directory.
        .package(path: "../huddle")
    ],
    targets: [
        .executableTarget(
            name: "SketchTogether",
            dependencies: [.product(name: "Huddle", package: "huddle")]
        )
    ]
)
