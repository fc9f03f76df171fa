/// Runs `body` over the contiguous bytes of `bytes`, copying only when the collection has no contiguous storage.
@inlinable
func withContiguousBytes<Result>(
    of bytes: some Sequence<UInt8>, _ body: (UnsafeRawBufferPointer) throws -> Result
) rethrows -> Result {
    if let result = try bytes.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
        return result
    }
    return try Array(bytes).withUnsafeBytes(body)
}

extension UnsafeRawBufferPointer {
    /// The base address typed as `UInt8`, or a non-null dummy for empty buffers (libsodium accepts any pointer with
    /// a zero length, but Swift gives empty buffers a nil base address).
    @usableFromInline
    var bytePointer: UnsafePointer<UInt8> {
        if let base = baseAddress { return base.assumingMemoryBound(to: UInt8.self) }
        return UnsafePointer(emptyByteSentinel)
    }
}

extension UnsafeMutableRawBufferPointer {
    /// The base address typed as `UInt8`, or a non-null dummy for empty buffers.
    @usableFromInline
    var mutableBytePointer: UnsafeMutablePointer<UInt8> {
        if let base = baseAddress { return base.assumingMemoryBound(to: UInt8.self) }
        return emptyByteSentinel
    }
}

/// A one-byte allocation that stands in for the base address of empty buffers. Nothing ever writes through it,
/// because every call that receives it is also told the length is zero.
@usableFromInline
nonisolated(unsafe) let emptyByteSentinel: UnsafeMutablePointer<UInt8> = {
    let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    pointer.initialize(to: 0)
    return pointer
}()
