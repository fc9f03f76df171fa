import CSodium

/// Comparisons whose running time does not depend on where the inputs differ.
///
/// Use these, never `==`, for MACs, tags, keys and any value an attacker may probe byte by byte.
public enum ConstantTime {
    /// Whether `lhs` and `rhs` hold the same bytes. Different lengths return `false` (lengths are not secret).
    public static func equals(_ lhs: some Sequence<UInt8>, _ rhs: some Sequence<UInt8>) -> Bool {
        withContiguousBytes(of: lhs) { left in
            withContiguousBytes(of: rhs) { right in equals(left, right) }
        }
    }

    /// Whether two raw buffers hold the same bytes, in constant time for equal lengths.
    public static func equals(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        Sodium.initialize()
        guard lhs.count == rhs.count else { return false }
        guard lhs.count > 0 else { return true }
        return sodium_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0
    }
}
