/// The metadata the CLI attaches to a shared file: its name.
struct AttachmentInfo: Codable, Sendable {
    /// The file's name, without directories.
    var name: String
}
