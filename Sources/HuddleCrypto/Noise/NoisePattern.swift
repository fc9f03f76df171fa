/// A Noise handshake pattern: the pre-message keys and the tokens of each message.
///
/// Huddle uses ``ikpsk2`` (the WireGuard pattern: the initiator knows the responder's static key, and a pre-shared
/// key derived from the session or invitation is mixed into the second message). ``ik``, ``xx`` and ``xxpsk3`` are
/// implemented too, so every vector in the cacophony subset is checked.
public struct NoisePattern: Sendable, Hashable {
    /// A handshake token.
    public enum Token: Sendable, Hashable {
        case e, s, ee, es, se, ss, psk
    }

    /// The pattern's name as it appears in the protocol name, e.g. `"IKpsk2"`.
    public let name: String
    /// Keys the initiator's peer knows before the handshake (only `s` is used here).
    public let initiatorPreMessage: [Token]
    /// Keys the initiator knows about the responder before the handshake.
    public let responderPreMessage: [Token]
    /// The tokens of each handshake message; message `i` is sent by the initiator when `i` is even.
    public let messages: [[Token]]

    /// Whether the pattern uses pre-shared keys (which changes how `e` is processed).
    public var usesPresharedKeys: Bool { messages.contains { $0.contains(.psk) } }
    /// How many pre-shared keys the pattern consumes.
    public var presharedKeyCount: Int { messages.reduce(0) { $0 + $1.filter { $0 == .psk }.count } }

    /// `IK`: `<- s`, `-> e, es, s, ss`, `<- e, ee, se`.
    public static let ik = NoisePattern(
        name: "IK", initiatorPreMessage: [], responderPreMessage: [.s],
        messages: [[.e, .es, .s, .ss], [.e, .ee, .se]])
    /// `IKpsk2`: IK with a PSK mixed in at the end of the second message.
    public static let ikpsk2 = NoisePattern(
        name: "IKpsk2", initiatorPreMessage: [], responderPreMessage: [.s],
        messages: [[.e, .es, .s, .ss], [.e, .ee, .se, .psk]])
    /// `XX`: `-> e`, `<- e, ee, s, es`, `-> s, se`.
    public static let xx = NoisePattern(
        name: "XX", initiatorPreMessage: [], responderPreMessage: [],
        messages: [[.e], [.e, .ee, .s, .es], [.s, .se]])
    /// `XXpsk3`: XX with a PSK mixed in at the end of the third message.
    public static let xxpsk3 = NoisePattern(
        name: "XXpsk3", initiatorPreMessage: [], responderPreMessage: [],
        messages: [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]])

    /// The patterns this build implements, by name.
    public static let all: [NoisePattern] = [.ik, .ikpsk2, .xx, .xxpsk3]

    /// The full protocol name, e.g. `Noise_IKpsk2_25519_ChaChaPoly_SHA256`.
    public func protocolName(hash: NoiseHashFunction) -> String {
        "Noise_\(name)_25519_ChaChaPoly_\(hash.rawValue)"
    }
}
