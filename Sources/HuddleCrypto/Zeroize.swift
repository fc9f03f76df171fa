import CSodium

/// Wipes `buffer` with `sodium_memzero`, which the compiler may not optimise away. Use it on temporary copies of
/// secrets that live outside ``SecureBytes``.
public func zeroize(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    sodium_memzero(base, buffer.count)
}
