import Foundation
import Huddle

/// The activity: one shared sketch. Every member holds the same copy.
struct SketchActivity: GroupActivity {
    static let activityIdentifier = "com.example.sketch-together"
    var title: String
    var metadata: GroupActivityMetadata {
        GroupActivityMetadata(title: "Sketch: \(title)", type: .createTogether)
    }
}

@main
struct SketchApp {
    static func main() async throws {
        print("sketch: \(SketchActivity(title: "untitled").metadata.title ?? "")")
    }
}
