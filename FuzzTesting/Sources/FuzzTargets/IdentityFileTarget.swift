import HuddleCrypto

/// Identity files (`IdentityFile`): damaged, truncated or foreign files give typed errors; what decodes encodes back
/// to the same bytes.
public enum IdentityFileTarget: FuzzTarget {
    public static let name = "identity"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let identity = try? IdentityFile.decode(bytes) else { return }
        precondition(IdentityFile.encode(identity) == bytes, "an identity file does not re-encode to its bytes")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var random = ChaChaRandomGenerator(seed: 3)
        return [("identity", IdentityFile.encode(Identity(using: &random)))]
    }
}
