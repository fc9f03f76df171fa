/// Everything that can go wrong in HuddleCrypto, each case naming what happened.
///
/// Authentication failures deliberately carry no detail: callers must not learn which byte was wrong.
public enum CryptoError: Error, Equatable, Sendable {
    /// An AEAD tag, MAC or signature did not verify. The input must be treated as forged.
    case authenticationFailed
    /// A key, nonce, tag or other fixed-size input had the wrong length.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// A Diffie-Hellman result was all zeros: the peer supplied a low-order (small-subgroup) public key.
    case lowOrderPoint
    /// A requested output length is outside what the primitive supports.
    case outputLengthOutOfRange(what: String, requested: Int, allowed: ClosedRange<Int>)
    /// A Noise handshake method was called in the wrong state (e.g. writing when it is the peer's turn).
    case handshakeOutOfOrder(String)
    /// A Noise handshake message was shorter than its pattern requires.
    case handshakeMessageTruncated
    /// A Noise cipher state's nonce reached its maximum (2^64 - 1 is reserved); the key must not be used again.
    case nonceExhausted
    /// A Noise handshake pattern needs a key (static, remote static or PSK) that was not supplied.
    case missingKey(String)
    /// The identity file could not be read or written; `reason` says why in words.
    case identityFile(IdentityFileProblem)
}

/// Why an identity file was rejected.
public enum IdentityFileProblem: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file does not exist.
    case notFound(path: String)
    /// The operating system refused the operation (`errno` and its message).
    case io(path: String, errno: Int32, message: String)
    /// The file does not start with the identity file magic: it is not a Huddle identity.
    case notAnIdentityFile
    /// The file is a Huddle identity in a format version this build does not read.
    case unsupportedVersion(UInt8)
    /// The file's length is wrong for its version (truncated or extended).
    case wrongLength(expected: Int, actual: Int)
    /// The checksum over the file's contents does not match: the file is damaged.
    case checksumMismatch
    /// The stored binding signature does not verify: the X25519 key is not bound to this identity.
    case bindingSignatureInvalid
    /// The file is readable by users other than its owner.
    case insecurePermissions(path: String, mode: UInt32)

    public var description: String {
        switch self {
        case .notFound(let path): return "identity file \(path) does not exist"
        case .io(let path, let errno, let message):
            return "cannot access identity file \(path): \(message) (errno \(errno))"
        case .notAnIdentityFile: return "not a Huddle identity file (bad magic)"
        case .unsupportedVersion(let version): return "identity file version \(version) is not supported"
        case .wrongLength(let expected, let actual):
            return "identity file is damaged: \(actual) bytes, expected \(expected)"
        case .checksumMismatch: return "identity file is damaged: checksum mismatch"
        case .bindingSignatureInvalid: return "identity file is damaged: key binding signature does not verify"
        case .insecurePermissions(let path, let mode):
            // The path once: the caller prints this line as it is.
            return "identity file \(path) has mode \(String(mode, radix: 8)); it must be 0600 (run chmod 600 on it)"
        }
    }
}

extension CryptoError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .authenticationFailed: return "authentication failed"
        case .invalidLength(let what, let expected, let actual):
            return "\(what) must be \(expected) bytes, got \(actual)"
        case .lowOrderPoint: return "Diffie-Hellman produced an all-zero result (low-order public key)"
        case .outputLengthOutOfRange(let what, let requested, let allowed):
            return "\(what) output length \(requested) is outside \(allowed.lowerBound)...\(allowed.upperBound)"
        case .handshakeOutOfOrder(let detail): return "handshake message out of order: \(detail)"
        case .handshakeMessageTruncated: return "handshake message truncated"
        case .nonceExhausted: return "cipher nonce exhausted; rekey required"
        case .missingKey(let what): return "handshake needs \(what), which was not supplied"
        case .identityFile(let problem): return problem.description
        }
    }
}
