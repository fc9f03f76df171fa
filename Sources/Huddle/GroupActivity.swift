/// Something people do together in a session, like Apple's `GroupActivity`: a Codable value every member holds the
/// same copy of. Put in it what stays constant for the experience (what to watch, which canvas), not live state
/// (send that with a ``Messenger``).
///
/// ```swift
/// struct DrawTogether: GroupActivity {
///     var canvasName: String
///     var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "Draw together: \(canvasName)") }
/// }
/// ```
public protocol GroupActivity: Codable, Sendable {
    /// A stable string naming the kind of activity. Members of a session must agree on it; the default is the
    /// fully qualified type name. Use reverse-DNS (`com.example.draw-together`) for a value that survives renames.
    static var activityIdentifier: String { get }

    /// Descriptive information shown to people before and while they take part.
    var metadata: GroupActivityMetadata { get }
}

extension GroupActivity {
    /// The fully qualified type name, for example `MyApp.DrawTogether`.
    public static var activityIdentifier: String { String(reflecting: Self.self) }
}
