#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The on-disk format of an ``Identity``, version 1 (169 bytes, binary):
///
/// ```
/// magic "HUDDLEID" (8) | version = 1 (1) | Ed25519 seed (32) | X25519 secret (32) | binding signature (64)
/// | BLAKE2b-256 checksum of everything before it (32)
/// ```
///
/// Files are written with mode 0600 through a temporary file and an atomic rename; reading checks the magic,
/// version, length, checksum, binding signature and permissions, and reports each failure as a distinct
/// ``IdentityFileProblem``.
public enum IdentityFile {
    /// The magic prefix.
    public static let magic: [UInt8] = Array("HUDDLEID".utf8)
    /// The format version this build writes and reads.
    public static let currentVersion: UInt8 = 1
    /// Length of a version-1 file in bytes.
    public static let encodedLength = 8 + 1 + 32 + 32 + 64 + 32

    /// Serialises `identity`. The returned array holds secret keys: wipe or drop it promptly.
    public static func encode(_ identity: Identity) -> [UInt8] {
        var bytes = magic
        bytes.append(currentVersion)
        bytes += identity.signingKey.seed.copyToArray()
        bytes += identity.agreementKey.secret.copyToArray()
        bytes += identity.publicIdentity.binding
        bytes += BLAKE2b.hash(bytes, outputLength: 32)
        return bytes
    }

    /// Parses a serialised identity, checking everything the format promises.
    public static func decode(_ bytes: [UInt8]) throws -> Identity {
        guard bytes.count >= magic.count + 1, Array(bytes[0..<magic.count]) == magic else {
            throw CryptoError.identityFile(.notAnIdentityFile)
        }
        let version = bytes[magic.count]
        guard version == currentVersion else { throw CryptoError.identityFile(.unsupportedVersion(version)) }
        guard bytes.count == encodedLength else {
            throw CryptoError.identityFile(.wrongLength(expected: encodedLength, actual: bytes.count))
        }
        let body = bytes[0..<(encodedLength - 32)]
        let checksum = bytes[(encodedLength - 32)...]
        guard ConstantTime.equals(BLAKE2b.hash(body, outputLength: 32), checksum) else {
            throw CryptoError.identityFile(.checksumMismatch)
        }
        var offset = magic.count + 1
        let seed = SecureBytes(bytes[offset..<(offset + 32)])
        offset += 32
        let agreement = SecureBytes(bytes[offset..<(offset + 32)])
        offset += 32
        let storedBinding = Array(bytes[offset..<(offset + 64)])
        let identity = Identity(
            signingKey: try Ed25519PrivateKey(seed: seed), agreementKey: try X25519PrivateKey(secret: agreement))
        // Ed25519 signatures are deterministic, so a genuine file's stored binding equals the recomputed one; a
        // mismatch means the keys and the signature were not written together.
        guard
            identity.publicIdentity.signingKey.isValidSignature(
                storedBinding, for: Identity.bindingContext + identity.agreementKey.publicKey.bytes)
        else {
            throw CryptoError.identityFile(.bindingSignatureInvalid)
        }
        return identity
    }

    /// Writes `identity` to `path` with mode 0600, atomically (temporary file, fsync, rename).
    public static func write(_ identity: Identity, to path: String) throws {
        var bytes = encode(identity)
        defer { bytes.withUnsafeMutableBytes { zeroize($0) } }
        let temporary = path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ioError(path: temporary) }
        var closed = false
        defer { if !closed { close(descriptor) } }
        // O_CREAT's mode is filtered by the umask and ignored for existing files; set it explicitly.
        guard fchmod(descriptor, 0o600) == 0 else { throw ioError(path: temporary) }
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                Glibc.write(descriptor, raw.baseAddress! + written, raw.count - written)
            }
            if result < 0 {
                if errno == EINTR { continue }
                let failure = ioError(path: temporary)
                unlink(temporary)
                throw failure
            }
            written += result
        }
        guard fsync(descriptor) == 0 else { throw ioError(path: temporary) }
        closed = true
        guard close(descriptor) == 0 else { throw ioError(path: temporary) }
        guard rename(temporary, path) == 0 else {
            let failure = ioError(path: path)
            unlink(temporary)
            throw failure
        }
    }

    /// Reads the identity at `path`. Refuses files that other users can read or write.
    public static func read(from path: String) throws -> Identity {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT { throw CryptoError.identityFile(.notFound(path: path)) }
            throw ioError(path: path)
        }
        let permissions = UInt32(status.st_mode) & 0o777
        guard permissions & 0o077 == 0 else {
            throw CryptoError.identityFile(.insecurePermissions(path: path, mode: permissions))
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ioError(path: path) }
        defer { close(descriptor) }
        // Read at most one byte more than a valid file so an oversized file is reported, not loaded.
        var bytes = [UInt8](repeating: 0, count: encodedLength + 1)
        defer { bytes.withUnsafeMutableBytes { zeroize($0) } }
        var total = 0
        while total < bytes.count {
            let result = bytes.withUnsafeMutableBytes { raw in
                Glibc.read(descriptor, raw.baseAddress! + total, raw.count - total)
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw ioError(path: path)
            }
            if result == 0 { break }
            total += result
        }
        return try decode(Array(bytes[0..<total]))
    }

    private static func ioError(path: String) -> CryptoError {
        let code = errno
        return .identityFile(.io(path: path, errno: code, message: String(cString: strerror(code))))
    }
}
