import CSodium

/// Heap storage for a libsodium incremental hash/MAC state, aligned to 64 bytes as libsodium's BLAKE2b state
/// requires, and wiped on release (HMAC states hold key-derived pads).
final class HashState: @unchecked Sendable {
    private let raw: UnsafeMutableRawPointer
    private let byteCount: Int

    init(byteCount: Int) {
        self.byteCount = byteCount
        raw = .allocate(byteCount: byteCount, alignment: 64)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: byteCount)
    }

    /// The state as an opaque pointer, for libsodium states Swift imports as opaque (over-aligned structs).
    var opaque: OpaquePointer { OpaquePointer(raw) }

    /// The state typed as libsodium's state struct `State`.
    func pointer<State>(to type: State.Type) -> UnsafeMutablePointer<State> {
        raw.assumingMemoryBound(to: State.self)
    }

    func copy() -> HashState {
        let clone = HashState(byteCount: byteCount)
        clone.raw.copyMemory(from: raw, byteCount: byteCount)
        return clone
    }

    deinit {
        sodium_memzero(raw, byteCount)
        raw.deallocate()
    }
}
