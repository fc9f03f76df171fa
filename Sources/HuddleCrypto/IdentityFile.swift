import SystemPackage

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
/// Files are written with mode 0600 through an exclusively created temporary file and an atomic rename; reading
/// checks ownership, type and permissions on the opened file, then the magic, version, length, checksum and binding
/// signature, and reports each failure as a distinct ``IdentityFileProblem``. Files are opened, read, written and
/// inspected through swift-system's `FileDescriptor` (which retries interrupted calls); `fchmod`, `rename`, `unlink`
/// and `fsync`, which it does not offer, are called directly.
public enum IdentityFile {
    /// The magic prefix.
    public static let magic: [UInt8] = Array("HUDDLEID".utf8)
    /// The format version this build writes and reads.
    public static let currentVersion: UInt8 = 1
    /// Length of a version-1 file in bytes.
    public static let encodedLength = 8 + 1 + 32 + 32 + 64 + 32

    /// Serialises `identity`. The returned array holds secret keys: wipe it (``zeroize(_:)``) or drop it promptly.
    public static func encode(_ identity: Identity) -> [UInt8] {
        // Reserve the final size up front so growing the array never leaves a freed copy of the secrets behind.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedLength)
        bytes += magic
        bytes.append(currentVersion)
        identity.signingKey.seed.withUnsafeBytes { bytes += $0 }
        identity.agreementKey.secret.withUnsafeBytes { bytes += $0 }
        bytes += identity.publicIdentity.binding
        bytes += BLAKE2b.hash(bytes, outputLength: 32)
        return bytes
    }

    /// Parses a serialised identity, checking everything the format promises.
    public static func decode(_ bytes: some Collection<UInt8>) throws -> Identity {
        try withContiguousBytes(of: Array(bytes)) { try decode(raw: $0) }
    }

    static func decode(raw bytes: UnsafeRawBufferPointer) throws -> Identity {
        guard bytes.count >= magic.count + 1, ConstantTime.equals(bytes[0..<magic.count], magic) else {
            throw CryptoError.identityFile(.notAnIdentityFile)
        }
        let version = bytes[magic.count]
        guard version == currentVersion else { throw CryptoError.identityFile(.unsupportedVersion(version)) }
        guard bytes.count == encodedLength else {
            throw CryptoError.identityFile(.wrongLength(expected: encodedLength, actual: bytes.count))
        }
        let body = UnsafeRawBufferPointer(rebasing: bytes[0..<(encodedLength - 32)])
        let checksum = UnsafeRawBufferPointer(rebasing: bytes[(encodedLength - 32)...])
        guard ConstantTime.equals(BLAKE2b.hash(body, outputLength: 32), checksum) else {
            throw CryptoError.identityFile(.checksumMismatch)
        }
        var offset = magic.count + 1
        let seed = SecureBytes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 32)]))
        offset += 32
        let agreement = SecureBytes(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 32)]))
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

    /// Writes `identity` to `path` with mode 0600, atomically: a new temporary file beside it (created exclusively,
    /// never through a symlink), `fsync`, `rename`, then `fsync` of the directory. On failure the temporary file is
    /// removed and `path` is untouched.
    public static func write(_ identity: Identity, to path: String) throws {
        var bytes = encode(identity)
        defer { bytes.withUnsafeMutableBytes { zeroize($0) } }
        let (file, temporary) = try createTemporaryFile(beside: path)
        var renamed = false
        defer {
            if !renamed { unlink(temporary) }
        }
        do {
            defer { try? file.close() }
            // O_CREAT's mode is filtered by the umask; set it explicitly.
            guard fchmod(file.rawValue, 0o600) == 0 else { throw ioError(path: temporary, errno) }
            do {
                try file.writeAll(bytes)
            } catch {
                throw ioError(path: temporary, error)
            }
            guard fsync(file.rawValue) == 0 else { throw ioError(path: temporary, errno) }
        }
        guard rename(temporary, path) == 0 else { throw ioError(path: path, errno) }
        renamed = true
        syncDirectory(containing: path)
    }

    /// Reads the identity at `path`. Refuses symlinks, anything but a regular file, files owned by another user and
    /// files that group or others may read or write; all checks are made on the opened descriptor, so the file
    /// cannot be swapped between check and read.
    public static func read(from path: String) throws -> Identity {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(
                FilePath(path), .readOnly, options: [.closeOnExec, .noFollow, .nonBlocking])
        } catch Errno.noSuchFileOrDirectory {
            throw CryptoError.identityFile(.notFound(path: path))
        } catch {
            throw ioError(path: path, error)
        }
        defer { try? file.close() }
        let status: Stat
        do {
            status = try file.stat()
        } catch {
            throw ioError(path: path, error)
        }
        guard status.type == .regular else {
            throw CryptoError.identityFile(
                .io(path: path, errno: Errno.invalidArgument.rawValue, message: "not a regular file"))
        }
        guard status.userID.rawValue == geteuid() else {
            throw CryptoError.identityFile(
                .io(
                    path: path, errno: Errno.notPermitted.rawValue,
                    message: "owned by uid \(status.userID.rawValue), not by this user"))
        }
        // The permission bits alone: set-user-ID, set-group-ID and sticky bits are not what this check is about.
        let permissions = UInt32(status.permissions.rawValue) & 0o777
        guard permissions & 0o077 == 0 else {
            throw CryptoError.identityFile(.insecurePermissions(path: path, mode: permissions))
        }
        // Read at most one byte more than a valid file so an oversized file is reported, not loaded.
        var bytes = [UInt8](repeating: 0, count: encodedLength + 1)
        defer { bytes.withUnsafeMutableBytes { zeroize($0) } }
        var total = 0
        while total < bytes.count {
            let count: Int
            do {
                count = try bytes.withUnsafeMutableBytes { raw in
                    try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[total...]))
                }
            } catch {
                throw ioError(path: path, error)
            }
            if count == 0 { break }
            total += count
        }
        return try bytes.withUnsafeBytes { try decode(raw: UnsafeRawBufferPointer(rebasing: $0[0..<total])) }
    }

    /// Creates `path.tmp-PID-N` exclusively (O_EXCL, O_NOFOLLOW), trying successive N: a name that already exists,
    /// or a planted symlink, is skipped instead of opened.
    private static func createTemporaryFile(beside path: String) throws -> (FileDescriptor, String) {
        var lastError = ioError(path: path, Errno.fileExists.rawValue)
        for attempt in 0..<64 {
            let temporary = "\(path).tmp-\(getpid())-\(attempt)"
            do {
                let file = try FileDescriptor.open(
                    FilePath(temporary), .writeOnly, options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                    permissions: .ownerReadWrite)
                return (file, temporary)
            } catch {
                lastError = ioError(path: temporary, error)
                guard (error as? Errno) == .fileExists else { throw lastError }
            }
        }
        throw lastError
    }

    /// Makes the rename durable. Best effort: a directory that cannot be opened or synced leaves the file written.
    private static func syncDirectory(containing path: String) {
        let directory = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        guard
            let file = try? FileDescriptor.open(
                FilePath(directory.isEmpty ? "/" : directory), .readOnly, options: [.directory, .closeOnExec])
        else { return }
        _ = fsync(file.rawValue)
        try? file.close()
    }

    /// The error for a failed call on `path` with the system's code `code`, in the system's words.
    private static func ioError(path: String, _ code: Int32) -> CryptoError {
        .identityFile(.io(path: path, errno: code, message: String(cString: strerror(code))))
    }

    /// The error for a swift-system call on `path` that threw `error`.
    private static func ioError(path: String, _ error: any Error) -> CryptoError {
        ioError(path: path, (error as? Errno)?.rawValue ?? Errno.ioError.rawValue)
    }
}
