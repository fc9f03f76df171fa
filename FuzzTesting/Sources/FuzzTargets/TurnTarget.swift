import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Datagrams from a TURN server (docs/PROTOCOL.md 10.1): whatever arrives from the server's address goes through
/// `StunMessage` and a `TurnClient` with requests in flight. A message that decodes must decode again, with the same
/// attributes, after it is encoded; the client must never deliver bytes outside the datagram, nor believe an answer
/// whose integrity it cannot verify (the fuzzer does not know the key, so no input may grant an allocation).
public enum TurnTarget: FuzzTarget {
    public static let name = "turn"

    static let server = NetworkAddress(ipv4: 192, 0, 2, 10, port: 3478)

    public static func run(_ input: UnsafeRawBufferPointer) {
        if let message = try? StunMessage(decoding: input) {
            let again = try? StunMessage(decoding: message.encoded())
            precondition(again?.attributes == message.attributes, "a STUN message does not survive re-encoding")
            precondition(again?.method == message.method && again?.messageClass == message.messageClass)
        }
        var random = ChaChaRandomGenerator(seed: 1)
        var client = TurnClient(
            server: server, credentials: TurnCredentials(username: "ada", password: "secret"), now: .zero)
        client.handleTimeout(now: .zero, using: &random)
        client.bindChannel(to: NetworkAddress(ipv4: 192, 0, 2, 99, port: 5000), now: .zero, using: &random)
        var copy = Array(input)
        copy.withUnsafeMutableBytes { datagram in
            if let delivered = client.handle(datagram, now: .zero, using: &random) {
                precondition(delivered.payload.upperBound <= datagram.count, "payload outside the datagram")
            }
        }
        precondition(client.relayedAddress == nil, "an unauthenticated answer granted an allocation")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        let transactionID: [UInt8] = Array(1...12)
        let peer = try WireAddress(family: 4, bytes: [192, 0, 2, 99], port: 5000)
        let data = StunMessage(
            method: .data, messageClass: .indication, transactionID: transactionID,
            attributes: [
                .xorAddress(StunAttribute.xorPeerAddress, peer, transactionID: transactionID),
                StunAttribute(type: StunAttribute.data, value: Array("hello".utf8)),
            ])
        let challenge = StunMessage(
            method: .allocate, messageClass: .error, transactionID: transactionID,
            attributes: [
                .error(code: 401, reason: "Unauthorized"), .text(StunAttribute.realm, "huddle.test"),
                .text(StunAttribute.nonce, "abc"),
            ])
        let granted = StunMessage(
            method: .allocate, messageClass: .success, transactionID: transactionID,
            attributes: [
                .xorAddress(StunAttribute.xorRelayedAddress, peer, transactionID: transactionID),
                .xorAddress(StunAttribute.xorMappedAddress, peer, transactionID: transactionID),
                .uint32(StunAttribute.lifetime, 600),
            ])
        return [
            ("data-indication", data.encoded(fingerprint: true)),
            ("challenge", challenge.encoded(fingerprint: true)),
            ("granted", granted.encoded(integrity: { _ in Array(repeating: 0, count: 20) }, fingerprint: true)),
            ("channel-data", [0x40, 0x00, 0x00, 0x05] + Array("hello".utf8)),
        ]
    }
}
