#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Descriptive information about an activity, as in Apple's `GroupActivityMetadata`: a title and subtitle for
/// people, the kind of activity, and a fallback URL for those who cannot run the app.
public struct GroupActivityMetadata: Codable, Sendable, Hashable {
    /// The kind of activity.
    public struct ActivityType: RawRepresentable, Codable, Sendable, Hashable, CustomStringConvertible {
        /// The type's name.
        public var rawValue: String

        /// A type named `rawValue`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A custom activity (the type custom experiences use).
        public static let generic = ActivityType(rawValue: "generic")
        /// Watching video together.
        public static let watchTogether = ActivityType(rawValue: "watchTogether")
        /// Listening to audio together.
        public static let listenTogether = ActivityType(rawValue: "listenTogether")
        /// Creating something together (a shared canvas, a document).
        public static let createTogether = ActivityType(rawValue: "createTogether")
        /// Playing a game together.
        public static let playTogether = ActivityType(rawValue: "playTogether")
        /// Learning together.
        public static let learnTogether = ActivityType(rawValue: "learnTogether")
        /// Exploring together (maps, travel plans, the web).
        public static let exploreTogether = ActivityType(rawValue: "exploreTogether")
        /// Working out together.
        public static let workoutTogether = ActivityType(rawValue: "workoutTogether")
        /// Shopping together.
        public static let shopTogether = ActivityType(rawValue: "shopTogether")

        public var description: String { rawValue }
    }

    /// A short title.
    public var title: String?
    /// A one-line description.
    public var subtitle: String?
    /// The kind of activity.
    public var type: ActivityType
    /// A URL people can open to take part without the app.
    public var fallbackURL: URL?

    /// Metadata for an activity.
    public init(title: String? = nil, subtitle: String? = nil, type: ActivityType = .generic, fallbackURL: URL? = nil) {
        self.title = title
        self.subtitle = subtitle
        self.type = type
        self.fallbackURL = fallbackURL
    }
}
