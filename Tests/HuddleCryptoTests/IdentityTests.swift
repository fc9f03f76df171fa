import Foundation
import HuddleCrypto
import Testing

@Suite("Identity and identity files")
struct IdentityTests {
    func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("huddle-id-\(UUID().uuidString)").path
    }

    @Test("An identity binds its X25519 key, and a foreign binding does not verify")
    func binding() throws {
        var random = ChaChaRandomGenerator(seed: 11)
        let identity = Identity(using: &random)
        #expect(identity.publicIdentity.hasValidBinding)
        let other = Identity(using: &random)
        let forged = PublicIdentity(
            signingKey: identity.publicIdentity.signingKey, agreementKey: other.agreementKey.publicKey,
            binding: identity.publicIdentity.binding)
        #expect(!forged.hasValidBinding)
        #expect(identity.publicIdentity.fingerprint.count == 39)
        #expect(identity.publicIdentity.fingerprint != other.publicIdentity.fingerprint)
    }

    @Test("The fingerprint is eight dash-separated groups of four lowercase hex digits of BLAKE2b-256's first 16 bytes")
    func fingerprintFormat() throws {
        var random = ChaChaRandomGenerator(seed: 12)
        for _ in 0..<50 {
            let key = Identity(using: &random).publicIdentity.signingKey
            let digest = BLAKE2b.hash(key.bytes, outputLength: 32)
            let hex = digest.prefix(16).map { byte in (byte < 0x10 ? "0" : "") + String(byte, radix: 16) }
            let expected = stride(from: 0, to: 16, by: 2).map { hex[$0] + hex[$0 + 1] }.joined(separator: "-")
            #expect(key.fingerprint == expected)
        }
    }

    @Test("A failed write leaves no temporary file with secrets behind, and never follows a planted symlink")
    func writeFailures() throws {
        var random = ChaChaRandomGenerator(seed: 14)
        let identity = Identity(using: &random)
        let directory = temporaryPath()
        mkdir(directory, 0o700)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The target is an existing directory, so the final rename fails after the temporary file was written.
        let target = directory + "/identity"
        mkdir(target, 0o700)
        #expect(throws: CryptoError.self) { try IdentityFile.write(identity, to: target) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["identity"])

        // A symlink planted at the first temporary name is skipped, not written through.
        let victim = directory + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8)))
        let destination = directory + "/id2"
        symlink(victim, "\(destination).tmp-\(getpid())-0")
        try IdentityFile.write(identity, to: destination)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep")
        #expect(try IdentityFile.read(from: destination).publicIdentity == identity.publicIdentity)
    }

    @Test("Seeded identities are reproducible")
    func seeded() throws {
        let a = try Identity(seed: SecureBytes([UInt8](repeating: 4, count: 32)))
        let b = try Identity(seed: SecureBytes([UInt8](repeating: 4, count: 32)))
        #expect(a.publicIdentity == b.publicIdentity)
    }

    @Test("Write then read returns the same identity, with mode 0600")
    func roundTrip() throws {
        var random = ChaChaRandomGenerator(seed: 12)
        let identity = Identity(using: &random)
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try IdentityFile.write(identity, to: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let loaded = try IdentityFile.read(from: path)
        #expect(loaded.publicIdentity == identity.publicIdentity)
        #expect(loaded.signingKey.seed.constantTimeEquals(identity.signingKey.seed))
    }

    @Test("Damaged, truncated, foreign, wrong-version and world-readable files give distinct typed errors")
    func damaged() throws {
        var random = ChaChaRandomGenerator(seed: 13)
        let encoded = IdentityFile.encode(Identity(using: &random))
        #expect(encoded.count == IdentityFile.encodedLength)

        var flipped = encoded
        flipped[50] ^= 1
        #expect(throws: CryptoError.identityFile(.checksumMismatch)) { try IdentityFile.decode(flipped) }
        #expect(throws: CryptoError.identityFile(.wrongLength(expected: 169, actual: 100))) {
            try IdentityFile.decode(Array(encoded.prefix(100)))
        }
        #expect(throws: CryptoError.identityFile(.notAnIdentityFile)) { try IdentityFile.decode(Array("hello".utf8)) }
        var future = encoded
        future[8] = 2
        #expect(throws: CryptoError.identityFile(.unsupportedVersion(2))) { try IdentityFile.decode(future) }

        // A binding signature that does not match the keys, with a valid checksum over the damaged body.
        var rebound = Array(encoded.prefix(IdentityFile.encodedLength - 32))
        rebound[80] ^= 1
        rebound += BLAKE2b.hash(rebound, outputLength: 32)
        #expect(throws: CryptoError.identityFile(.bindingSignatureInvalid)) { try IdentityFile.decode(rebound) }

        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: CryptoError.identityFile(.notFound(path: path))) { try IdentityFile.read(from: path) }
        try IdentityFile.write(Identity(using: &random), to: path)
        chmod(path, 0o644)
        #expect(throws: CryptoError.identityFile(.insecurePermissions(path: path, mode: 0o644))) {
            try IdentityFile.read(from: path)
        }
        chmod(path, 0o600)
        // A symlink to a valid identity is refused (O_NOFOLLOW), and so is a directory.
        let link = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: link) }
        symlink(path, link)
        #expect(throws: CryptoError.self) { try IdentityFile.read(from: link) }
        let directory = temporaryPath()
        mkdir(directory, 0o700)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: CryptoError.self) { try IdentityFile.read(from: directory) }
        try Data(encoded + [0]).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        #expect(throws: CryptoError.identityFile(.wrongLength(expected: 169, actual: 170))) {
            try IdentityFile.read(from: path)
        }
    }
}
