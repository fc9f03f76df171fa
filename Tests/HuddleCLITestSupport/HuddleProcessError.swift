/// Why driving a `huddle` process failed.
public enum HuddleProcessError: Error, CustomStringConvertible {
    /// A wait ran out; the text says what was awaited and what the process printed last.
    case timedOut(String)
    /// The `huddle` executable is not where it was looked for.
    case executableMissing(String)
    /// A setup command (such as `ip netns add`) failed.
    case commandFailed(String)

    public var description: String {
        switch self {
        case .timedOut(let text): "timed out: \(text)"
        case .executableMissing(let text): text
        case .commandFailed(let text): text
        }
    }
}
