/// A TURN server's long-term credentials (RFC 8489 9.2): a username and a password, from which the key of every
/// MESSAGE-INTEGRITY is derived as `MD5(username ":" realm ":" password)` once the server names its realm.
public struct TurnCredentials: Hashable, Sendable {
    /// The username, sent in the clear in every authenticated request.
    public var username: String
    /// The password; it never leaves this node.
    public var password: String

    /// Credentials for one server.
    public init(username: String, password: String) {
        self.username = username
        self.password = password
    }
}
