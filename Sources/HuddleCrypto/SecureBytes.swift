import CSodium

/// A fixed-size buffer of secret bytes that is wiped with `sodium_memzero` when the last reference goes away.
///
/// `SecureBytes` is immutable after initialisation, so sharing it between tasks is safe. It deliberately does not
/// conform to `Equatable`: compare secrets only with ``constantTimeEquals(_:)``, which takes time independent of
/// where the inputs differ. Its `description` never prints the contents.
public final class SecureBytes: @unchecked Sendable {
    private let storage: UnsafeMutableRawBufferPointer

    /// The number of bytes held.
    public let count: Int

    /// Creates `count` bytes and lets `initializer` fill them. The buffer starts zeroed.
    public init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) rethrows {
        precondition(count >= 0, "SecureBytes count must not be negative")
        Sodium.initialize()
        storage = .allocate(byteCount: max(count, 1), alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        let visible = UnsafeMutableRawBufferPointer(rebasing: storage[0..<count])
        do {
            try initializer(visible)
        } catch {
            sodium_memzero(storage.baseAddress, storage.count)
            storage.deallocate()
            throw error
        }
        self.count = count
    }

    /// Creates a copy of `bytes`. The caller remains responsible for wiping its own copy.
    public convenience init(_ bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in
            buffer.copyBytes(from: bytes)
        }
    }

    /// Creates `count` bytes from `generator`.
    public convenience init(count: Int, using generator: inout some RandomBytesGenerator) {
        self.init(count: count) { buffer in generator.fill(buffer) }
    }

    /// Calls `body` with the secret bytes. The pointer must not escape the closure.
    @inlinable
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(rawBytes)
    }

    @usableFromInline
    var rawBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(storage)[0..<count])
    }

    /// Compares with `other` in constant time (for equal lengths). Different lengths compare unequal.
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        other.withUnsafeBytes { constantTimeEquals($0) }
    }

    /// Compares with `bytes` in constant time (for equal lengths). Different lengths compare unequal.
    public func constantTimeEquals(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == count else { return false }
        guard count > 0 else { return true }
        return sodium_memcmp(storage.baseAddress, bytes.baseAddress, count) == 0
    }

    /// Whether every byte is zero, checked in constant time.
    public var isAllZero: Bool {
        sodium_is_zero(storage.baseAddress?.assumingMemoryBound(to: UInt8.self), count) == 1
    }

    /// A copy of the bytes as an array. Use only where a public value is derived (e.g. printing a test vector);
    /// the returned array is not wiped.
    public func copyToArray() -> [UInt8] { Array(rawBytes) }

    deinit {
        sodium_memzero(storage.baseAddress, storage.count)
        #if DEBUG
            Self.wipeObserver?(UnsafeRawBufferPointer(storage))
        #endif
        storage.deallocate()
    }
}

#if DEBUG
    extension SecureBytes {
        /// Debug builds only, for tests (TEST-MATRIX S2): while bound with `$wipeObserver.withValue(_:operation:)`,
        /// every `SecureBytes` released in that task hands its whole buffer to the observer after `sodium_memzero` and
        /// before the memory is freed. A task-local, so tests running side by side never see each other's secrets.
        @TaskLocal static var wipeObserver: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    }
#endif

extension SecureBytes: CustomStringConvertible {
    /// Never reveals the contents.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
}
