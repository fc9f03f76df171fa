import Testing

@testable import HuddleCrypto
@testable import HuddleProtocol
@testable import HuddleSession

/// `kdf.json`: the key derivations of PROTOCOL.md sections 7.6 and 8.1. Session and invitation credentials through
/// `SessionKeys` (psk, mac secret, admission id); raw `crypto_kdf` through `KeyDerivation`; identities through
/// `Identity` (from a seed, and from fixed keys: public keys and binding signature); mac1 and cookie keys through
/// `MacAuthenticator`; Noise's HKDF through `NoiseHashFunction.sha256`.
@Suite("Vectors: kdf.json")
struct KDFVectorTests {
    static let file = "kdf"
    static let credentialCases: CaseFilter = { ((try? $0.string("name")) ?? "").hasSuffix("_credentials") }
    static let rawKDF: CaseFilter = { $0.has("subkey_id") }
    static let identities: CaseFilter = { $0.has("binding_signature") }
    static let macKeyCases: CaseFilter = { $0.has("mac1_key") }
    static let hkdf: CaseFilter = { $0.has("chaining_key") }

    @Test("Every case of kdf.json is checked (13 cases)")
    func coverage() throws {
        try expectCoverage(
            of: Self.file, count: 13,
            groups: [
                ("credentials", Self.credentialCases), ("crypto_kdf", Self.rawKDF), ("identity", Self.identities),
                ("mac keys", Self.macKeyCases), ("hkdf", Self.hkdf),
            ])
    }

    @Test("Session and invitation credentials", arguments: VectorFile.names(file, where: credentialCases))
    func credentials(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let secret = SecureBytes(try vector.bytes("secret"))
        let context = try vector.string("context")
        let presharedKey: SecureBytes
        let macSecret: SecureBytes
        let admission: AdmissionID
        if name == "session_credentials" {
            #expect(SessionKeys.sessionContext.bytes == Array(context.utf8))
            let peer = try X25519PublicKey(bytes: [UInt8](repeating: 9, count: 32))
            let member = try SessionKeys.memberCredentials(sessionSecret: secret, peer: peer)
            let (id, credentials) = try SessionKeys.sessionAdmission(sessionSecret: secret)
            #expect(credentials.presharedKey.bytes == member.presharedKey.bytes)
            #expect(credentials.macSecret.bytes == member.macSecret.bytes)
            (presharedKey, macSecret, admission) = (member.presharedKey, member.macSecret, id)
        } else {
            #expect(SessionKeys.invitationContext.bytes == Array(context.utf8))
            let credentials = try SessionKeys.admissionCredentials(invitationSecret: secret)
            let peer = try X25519PublicKey(bytes: [UInt8](repeating: 9, count: 32))
            let joiner = try SessionKeys.joinerCredentials(invitationSecret: secret, member: peer)
            #expect(joiner.presharedKey.bytes == credentials.presharedKey.bytes)
            #expect(joiner.macSecret.bytes == credentials.macSecret.bytes)
            #expect(
                try InvitationGrant(secret: secret, expiresAt: 0).id
                    == SessionKeys.admissionID(invitationSecret: secret))
            (presharedKey, macSecret, admission) = (
                credentials.presharedKey, credentials.macSecret, try SessionKeys.admissionID(invitationSecret: secret)
            )
        }
        #expect(try hexString(presharedKey.bytes) == vector.string("psk"))
        #expect(try hexString(macSecret.bytes) == vector.string("mac_secret"))
        #expect(try admission.rawValue == vector.uint64("admission_id"))
        let subkey3 = try KeyDerivation.deriveSubkey(from: secret, id: 3, context: .init(context), length: 16)
        #expect(try hexString(subkey3.bytes) == vector.string("subkey3"))
        #expect(admission.rawValue == littleEndianValue(Array(subkey3.bytes.prefix(8))))
    }

    @Test("Raw crypto_kdf sub-keys", arguments: VectorFile.names(file, where: rawKDF))
    func cryptoKDF(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let subkey = try KeyDerivation.deriveSubkey(
            from: SecureBytes(try vector.bytes("master_key")), id: try vector.uint64("subkey_id"),
            context: .init(try vector.string("context")), length: try vector.int("length"))
        #expect(try hexString(subkey.bytes) == vector.string("subkey"))
    }

    @Test(
        "Identities: signing key, static key and binding signature",
        arguments: VectorFile.names(file, where: identities))
    func identity(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let identity: Identity
        if vector.has("seed") {
            identity = try Identity(seed: SecureBytes(try vector.bytes("seed")))
            #expect(try hexString(identity.signingKey.seed.bytes) == vector.string("signing_seed"))
            #expect(try hexString(identity.agreementKey.secret.bytes) == vector.string("static_private"))
        } else {
            identity = Identity(
                signingKey: try Ed25519PrivateKey(seedBytes: try vector.bytes("signing_seed")),
                agreementKey: try X25519PrivateKey(secretBytes: try vector.bytes("static_private")))
        }
        #expect(try hexString(identity.publicIdentity.signingKey.bytes) == vector.string("signing_key"))
        #expect(try hexString(identity.publicIdentity.agreementKey.bytes) == vector.string("static_key"))
        #expect(try hexString(identity.publicIdentity.binding) == vector.string("binding_signature"))
        // The vector's binding verifies as Swift checks it.
        let published = PublicIdentity(
            signingKey: try Ed25519PublicKey(bytes: try vector.bytes("signing_key")),
            agreementKey: try X25519PublicKey(bytes: try vector.bytes("static_key")),
            binding: try vector.bytes("binding_signature"))
        #expect(published.hasValidBinding)
    }

    @Test("mac1 and cookie keys", arguments: VectorFile.names(file, where: macKeyCases))
    func macKeys(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let authenticator = try MacAuthenticator(
            macSecret: SecureBytes(try vector.bytes("mac_secret")),
            receiverStatic: try X25519PublicKey(bytes: try vector.bytes("static_key")))
        #expect(try hexString(authenticator.mac1Key.bytes) == vector.string("mac1_key"))
        #expect(try hexString(authenticator.cookieKey.secret.bytes) == vector.string("cookie_key"))
    }

    @Test("Noise HKDF (HMAC-SHA256), three outputs", arguments: VectorFile.names(file, where: hkdf))
    func noiseHKDF(name: String) throws {
        let vector = try VectorFile.load(Self.file)(name)
        let outputs = NoiseHashFunction.sha256.hkdf(
            chainingKey: SecureBytes(try vector.bytes("chaining_key")),
            inputKeyMaterial: SecureBytes(try vector.bytes("input_key_material")), outputs: 3)
        #expect(try outputs.map { JSON.hex($0.bytes) } == vector.array("outputs"))
    }
}
