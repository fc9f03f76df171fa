/// A CLOSE frame (type 0x05): the sender closes the connection.
///
/// Body: `code (varint) | reason length (varint) | reason (UTF-8)`, with the reason at most
/// ``WireLimits/maxCloseReasonLength`` bytes. CLOSE frames are rare, so the reason is an owned `String`.
public struct CloseFrame: Hashable, Sendable, WireEncodable {
    /// Why the connection is closed.
    public var code: CloseCode
    /// A human-readable explanation for logs; may be empty.
    public var reason: String

    /// Creates a CLOSE frame; ``encode(into:)-(inout ByteWriter)`` checks the reason's length.
    @inlinable
    public init(code: CloseCode, reason: String = "") {
        self.code = code
        self.reason = reason
    }

    /// Decodes the body (after the type) of a CLOSE frame. The reason length is checked against the limit
    /// and the remaining bytes before the reason is read; invalid UTF-8 throws ``WireError/invalidUTF8``.
    init(decodingBody reader: inout ByteReader) throws(WireError) {
        code = CloseCode(rawValue: try reader.readVarInt())
        let length = try reader.readVarInt()
        guard length <= UInt64(WireLimits.maxCloseReasonLength) else {
            throw .lengthOutOfRange(
                field: .closeReasonLength, value: length, limit: UInt64(WireLimits.maxCloseReasonLength))
        }
        let bytes = try reader.readBytes(count: length)
        let reason = String(decoding: bytes, as: UTF8.self)
        // String(decoding:) repairs invalid input with U+FFFD, so the input was valid exactly when the
        // repaired string re-encodes to the same bytes.
        guard reason.utf8.elementsEqual(bytes) else {
            throw .invalidUTF8
        }
        self.reason = reason
    }

    /// The encoded length of the frame including its type byte and reason.
    public var encodedLength: Int {
        let reasonLength = reason.utf8.count
        return 1 + VarInt.encodedLength(of: code.rawValue) + VarInt.encodedLength(of: UInt64(reasonLength))
            + reasonLength
    }

    /// Writes the frame; throws ``WireError/lengthOutOfRange(field:value:limit:)`` for a reason over 256
    /// UTF-8 bytes and ``WireError/varIntOutOfRange(_:)`` for a code above 2^62 - 1.
    public func encode(into writer: inout ByteWriter) throws(WireError) {
        var reason = reason
        let reasonLength = reason.utf8.count
        guard reasonLength <= WireLimits.maxCloseReasonLength else {
            throw .lengthOutOfRange(
                field: .closeReasonLength, value: UInt64(reasonLength), limit: UInt64(WireLimits.maxCloseReasonLength))
        }
        try writer.require(encodedLength)
        try writer.writeVarInt(FrameType.close.rawValue)
        try writer.writeVarInt(code.rawValue)
        try writer.writeVarInt(UInt64(reasonLength))
        let result: Result<Void, WireError> = reason.withUTF8 { utf8 in
            Result { () throws(WireError) in try writer.writeBytes(UnsafeRawBufferPointer(utf8)) }
        }
        try result.get()
    }
}
