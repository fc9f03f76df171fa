/// One attribute of a STUN message (RFC 8489 14): a type and its value, without the padding to 4 bytes.
///
/// The constructors and readers here cover what a TURN client sends and reads; any other attribute is carried as
/// raw bytes.
public struct StunAttribute: Hashable, Sendable {
    /// The attribute type. Types below 0x8000 are comprehension-required.
    public var type: UInt16
    /// The value, unpadded.
    public var value: [UInt8]

    /// An attribute with a raw value.
    public init(type: UInt16, value: [UInt8]) {
        self.type = type
        self.value = value
    }

    // MARK: - Types (RFC 8489 18.3, RFC 8656 18)

    /// USERNAME (0x0006).
    public static let username: UInt16 = 0x0006
    /// MESSAGE-INTEGRITY (0x0008): HMAC-SHA1 over the message up to it.
    public static let messageIntegrity: UInt16 = 0x0008
    /// ERROR-CODE (0x0009).
    public static let errorCode: UInt16 = 0x0009
    /// CHANNEL-NUMBER (0x000C).
    public static let channelNumber: UInt16 = 0x000C
    /// LIFETIME (0x000D), seconds.
    public static let lifetime: UInt16 = 0x000D
    /// XOR-PEER-ADDRESS (0x0012).
    public static let xorPeerAddress: UInt16 = 0x0012
    /// DATA (0x0013).
    public static let data: UInt16 = 0x0013
    /// REALM (0x0014).
    public static let realm: UInt16 = 0x0014
    /// NONCE (0x0015).
    public static let nonce: UInt16 = 0x0015
    /// XOR-RELAYED-ADDRESS (0x0016).
    public static let xorRelayedAddress: UInt16 = 0x0016
    /// REQUESTED-TRANSPORT (0x0019).
    public static let requestedTransport: UInt16 = 0x0019
    /// XOR-MAPPED-ADDRESS (0x0020).
    public static let xorMappedAddress: UInt16 = 0x0020
    /// SOFTWARE (0x8022).
    public static let software: UInt16 = 0x8022
    /// FINGERPRINT (0x8028): CRC-32 of the message up to it, XOR 0x5354554E.
    public static let fingerprint: UInt16 = 0x8028

    // MARK: - Constructors

    /// A UTF-8 text attribute (USERNAME, REALM, NONCE, SOFTWARE).
    public static func text(_ type: UInt16, _ text: String) -> StunAttribute {
        StunAttribute(type: type, value: Array(text.utf8))
    }

    /// A 32-bit big-endian attribute (LIFETIME).
    public static func uint32(_ type: UInt16, _ value: UInt32) -> StunAttribute {
        StunAttribute(
            type: type,
            value: [
                UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16),
                UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
            ])
    }

    /// REQUESTED-TRANSPORT for UDP (protocol 17, then three reserved bytes).
    public static let requestedTransportUDP = StunAttribute(type: requestedTransport, value: [17, 0, 0, 0])

    /// CHANNEL-NUMBER: the number, then two reserved bytes.
    public static func channel(_ number: UInt16) -> StunAttribute {
        StunAttribute(type: channelNumber, value: [UInt8(number >> 8), UInt8(truncatingIfNeeded: number), 0, 0])
    }

    /// An XOR-encoded address (XOR-MAPPED-, XOR-PEER- or XOR-RELAYED-ADDRESS) in a message with `transactionID`:
    /// the port XOR the cookie's top 16 bits, the address XOR the cookie (and, for IPv6, the transaction ID).
    public static func xorAddress(_ type: UInt16, _ address: WireAddress, transactionID: [UInt8]) -> StunAttribute {
        let mask = StunMessage.magicCookieBytes + transactionID
        let port = address.port ^ 0x2112
        var value: [UInt8] = [0, address.family == 4 ? 0x01 : 0x02, UInt8(port >> 8), UInt8(truncatingIfNeeded: port)]
        for (index, byte) in address.bytes.enumerated() { value.append(byte ^ mask[index]) }
        return StunAttribute(type: type, value: value)
    }

    // MARK: - Readers

    /// The value as UTF-8 text, if it is valid UTF-8.
    public var text: String? {
        String(validating: value, as: UTF8.self)
    }

    /// The value as a 32-bit big-endian integer.
    public func uint32() throws(StunError) -> UInt32 {
        guard value.count == 4 else { throw .malformedAttribute(type: type) }
        return UInt32(value[0]) << 24 | UInt32(value[1]) << 16 | UInt32(value[2]) << 8 | UInt32(value[3])
    }

    /// The value as an XOR-encoded address in a message with `transactionID`.
    public func xorAddress(transactionID: [UInt8]) throws(StunError) -> WireAddress {
        guard value.count >= 4 else { throw .malformedAttribute(type: type) }
        let family: UInt8
        switch (value[1], value.count) {
        case (0x01, 8): family = 4
        case (0x02, 20): family = 6
        default: throw .malformedAttribute(type: type)
        }
        let mask = StunMessage.magicCookieBytes + transactionID
        let port = (UInt16(value[2]) << 8 | UInt16(value[3])) ^ 0x2112
        let bytes = value[4...].enumerated().map { $0.element ^ mask[$0.offset] }
        do {
            return try WireAddress(family: family, bytes: bytes, port: port)
        } catch {
            throw .malformedAttribute(type: type)
        }
    }

    /// The value as an ERROR-CODE: the code (300-699) and the reason phrase.
    public func errorCode() throws(StunError) -> (code: Int, reason: String) {
        guard value.count >= 4, (3...6).contains(value[2] & 0x07), value[3] < 100 else {
            throw .malformedAttribute(type: type)
        }
        let reason = String(decoding: value[4...], as: UTF8.self)
        return (Int(value[2] & 0x07) * 100 + Int(value[3]), reason)
    }

    /// An ERROR-CODE attribute (for servers and tests): `code` from 300 to 699.
    public static func error(code: Int, reason: String) -> StunAttribute {
        precondition((300...699).contains(code), "STUN error codes run from 300 to 699")
        return StunAttribute(type: errorCode, value: [0, 0, UInt8(code / 100), UInt8(code % 100)] + Array(reason.utf8))
    }
}
