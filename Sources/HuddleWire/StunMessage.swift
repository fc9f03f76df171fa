/// A STUN message (RFC 8489 5-6): a 20-byte header (type, length, magic cookie, 96-bit transaction ID) and
/// attributes, each padded to 4 bytes, all big-endian.
///
/// Encoding computes MESSAGE-INTEGRITY through a closure (this module does no cryptography) and FINGERPRINT itself.
/// Decoding checks the header, the length, every attribute's bounds and a FINGERPRINT when there is one, and keeps
/// the bytes a MESSAGE-INTEGRITY covers so the caller can verify it with its key.
public struct StunMessage: Sendable {
    /// The magic cookie, 0x2112A442, which tells STUN apart from other protocols on the same port.
    public static let magicCookie: UInt32 = 0x2112_A442
    /// The magic cookie's bytes, in network order.
    public static let magicCookieBytes: [UInt8] = [0x21, 0x12, 0xA4, 0x42]
    /// The header length.
    public static let headerLength = 20
    /// The FINGERPRINT's XOR constant ("STUN").
    static let fingerprintXor: UInt32 = 0x5354_554E

    /// What is asked or told.
    public var method: StunMethod
    /// Request, indication, success or error.
    public var messageClass: StunClass
    /// The 12-byte transaction ID matching a response to its request.
    public var transactionID: [UInt8]
    /// The attributes in order, MESSAGE-INTEGRITY and FINGERPRINT excluded (encoding adds them; decoding keeps
    /// what a MESSAGE-INTEGRITY covers in ``integrity``).
    public var attributes: [StunAttribute]
    /// For a decoded message with MESSAGE-INTEGRITY: the bytes the HMAC covers (the message up to the attribute,
    /// its length field counting through it) and the 20-byte tag received. Attributes after it other than
    /// FINGERPRINT are ignored, as RFC 8489 14.5 requires.
    public private(set) var integrity: (covered: [UInt8], tag: [UInt8])?

    /// A message to encode.
    public init(method: StunMethod, messageClass: StunClass, transactionID: [UInt8], attributes: [StunAttribute] = []) {
        precondition(transactionID.count == 12, "a STUN transaction ID has 12 bytes")
        self.method = method
        self.messageClass = messageClass
        self.transactionID = transactionID
        self.attributes = attributes
        self.integrity = nil
    }

    /// The first attribute of `type`, if any.
    public func attribute(_ type: UInt16) -> StunAttribute? {
        attributes.first { $0.type == type }
    }

    /// The 16-bit message type: the method's 12 bits with the class's two bits interleaved (RFC 8489 5).
    var messageType: UInt16 {
        let method = self.method.rawValue
        let classBits = UInt16(messageClass.rawValue)
        return (method & 0x000F) | ((method & 0x0070) << 1) | ((method & 0x0F80) << 2) | ((classBits & 1) << 4)
            | ((classBits & 2) << 7)
    }

    /// Whether `datagram` looks like a STUN message: first two bits zero, the magic cookie, a length that is a
    /// multiple of 4 and matches the datagram.
    public static func isStun(_ datagram: UnsafeRawBufferPointer) -> Bool {
        guard datagram.count >= headerLength, datagram[0] & 0xC0 == 0 else { return false }
        let length = Int(datagram[2]) << 8 | Int(datagram[3])
        return length % 4 == 0 && length + headerLength == datagram.count && datagram[4] == 0x21
            && datagram[5] == 0x12 && datagram[6] == 0xA4 && datagram[7] == 0x42
    }

    // MARK: - Encoding

    /// The message's bytes, with MESSAGE-INTEGRITY computed by `integrity` (given the bytes it covers, returning the
    /// 20-byte HMAC-SHA1) when set, and FINGERPRINT when `fingerprint` is true.
    public func encoded(integrity: (([UInt8]) -> [UInt8])? = nil, fingerprint: Bool = false) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.headerLength + attributes.reduce(0) { $0 + 4 + ($1.value.count + 3) & ~3 } + 32)
        bytes += [UInt8(messageType >> 8), UInt8(truncatingIfNeeded: messageType), 0, 0]
        bytes += Self.magicCookieBytes + transactionID
        for attribute in attributes { Self.append(attribute, to: &bytes) }
        if let integrity {
            Self.setLength(of: &bytes, to: bytes.count - Self.headerLength + 24)
            let tag = integrity(bytes)
            precondition(tag.count == 20, "MESSAGE-INTEGRITY is a 20-byte HMAC-SHA1")
            Self.append(StunAttribute(type: StunAttribute.messageIntegrity, value: tag), to: &bytes)
        }
        if fingerprint {
            Self.setLength(of: &bytes, to: bytes.count - Self.headerLength + 8)
            let crc = CRC32.checksum(bytes) ^ Self.fingerprintXor
            Self.append(.uint32(StunAttribute.fingerprint, crc), to: &bytes)
        }
        Self.setLength(of: &bytes, to: bytes.count - Self.headerLength)
        return bytes
    }

    private static func append(_ attribute: StunAttribute, to bytes: inout [UInt8]) {
        let length = attribute.value.count
        bytes += [
            UInt8(attribute.type >> 8), UInt8(truncatingIfNeeded: attribute.type), UInt8(length >> 8),
            UInt8(truncatingIfNeeded: length),
        ]
        bytes += attribute.value
        bytes += repeatElement(0, count: (4 - length % 4) % 4)
    }

    private static func setLength(of bytes: inout [UInt8], to length: Int) {
        bytes[2] = UInt8(length >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: length)
    }

    // MARK: - Decoding

    /// Decodes and checks a whole datagram.
    public init(decoding datagram: UnsafeRawBufferPointer) throws(StunError) {
        guard datagram.count >= Self.headerLength else { throw .truncated }
        guard datagram[0] & 0xC0 == 0, datagram[4] == 0x21, datagram[5] == 0x12, datagram[6] == 0xA4,
            datagram[7] == 0x42
        else { throw .notStun }
        let length = Int(datagram[2]) << 8 | Int(datagram[3])
        guard length % 4 == 0 else { throw .notStun }
        guard length == datagram.count - Self.headerLength else {
            throw .lengthMismatch(declared: length, actual: datagram.count - Self.headerLength)
        }
        let type = UInt16(datagram[0]) << 8 | UInt16(datagram[1])
        method = StunMethod(rawValue: (type & 0x000F) | ((type & 0x00E0) >> 1) | ((type & 0x3E00) >> 2))
        messageClass = StunClass(rawValue: UInt8((type & 0x0010) >> 4 | (type & 0x0100) >> 7))!
        transactionID = Array(datagram[8..<20])
        attributes = []
        integrity = nil
        var offset = Self.headerLength
        while offset < datagram.count {
            guard offset + 4 <= datagram.count else { throw .truncated }
            let attributeType = UInt16(datagram[offset]) << 8 | UInt16(datagram[offset + 1])
            let attributeLength = Int(datagram[offset + 2]) << 8 | Int(datagram[offset + 3])
            let end = offset + 4 + attributeLength
            guard end <= datagram.count else { throw .truncated }
            let value = Array(datagram[(offset + 4)..<end])
            switch attributeType {
            case StunAttribute.fingerprint:
                guard value.count == 4, end == datagram.count else { throw .malformedAttribute(type: attributeType) }
                let received =
                    UInt32(value[0]) << 24 | UInt32(value[1]) << 16 | UInt32(value[2]) << 8 | UInt32(value[3])
                guard CRC32.checksum(datagram[0..<offset]) ^ Self.fingerprintXor == received else {
                    throw .fingerprintMismatch
                }
            case StunAttribute.messageIntegrity where integrity == nil:
                guard value.count == 20 else { throw .malformedAttribute(type: attributeType) }
                var covered = Array(datagram[0..<offset])
                Self.setLength(of: &covered, to: end - Self.headerLength)
                integrity = (covered, value)
            default:
                if integrity == nil { attributes.append(StunAttribute(type: attributeType, value: value)) }
            }
            offset = end + (4 - attributeLength % 4) % 4
        }
    }

    /// ``init(decoding:)`` for an array.
    public init(decoding bytes: [UInt8]) throws(StunError) {
        let result: Result<StunMessage, StunError> = bytes.withUnsafeBytes { raw in
            Result { () throws(StunError) in try StunMessage(decoding: raw) }
        }
        self = try result.get()
    }
}
