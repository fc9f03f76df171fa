/// A value with a wire encoding of a known length.
///
/// Conforming types write themselves with ``encode(into:)-(inout ByteWriter)`` and report the exact
/// number of bytes that will take in ``encodedLength``, so a packetizer can size frames before writing
/// them. Encoding validates the value first (limits, field sizes) and throws ``WireError`` instead of
/// producing bytes that a peer would reject.
public protocol WireEncodable {
    /// The exact number of bytes ``encode(into:)-(inout ByteWriter)`` writes for this value.
    var encodedLength: Int { get }

    /// Writes the encoding of this value at the writer's position.
    ///
    /// Throws ``WireError/bufferTooSmall(needed:available:)`` if the writer has less than
    /// ``encodedLength`` bytes of room, or another ``WireError`` if the value breaks a wire limit.
    /// On error, bytes may have been written past the writer's starting position; the caller should
    /// discard them.
    func encode(into writer: inout ByteWriter) throws(WireError)
}

extension WireEncodable {
    /// Appends the encoding of this value to `bytes`.
    ///
    /// On error `bytes` is left as it was.
    public func encode(into bytes: inout [UInt8]) throws(WireError) {
        let start = bytes.count
        let length = encodedLength
        bytes.append(contentsOf: repeatElement(0, count: length))
        let result: Result<Int, WireError> = bytes.withUnsafeMutableBytes { raw in
            Result { () throws(WireError) in
                var writer = ByteWriter(UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
                try encode(into: &writer)
                return writer.bytesWritten
            }
        }
        switch result {
        case .success(let written):
            precondition(written == length, "encodedLength \(length) disagrees with \(written) bytes written")
        case .failure(let error):
            bytes.removeSubrange(start...)
            throw error
        }
    }

    /// Returns the encoding of this value as a new array.
    public func encoded() throws(WireError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedLength)
        try encode(into: &bytes)
        return bytes
    }
}
