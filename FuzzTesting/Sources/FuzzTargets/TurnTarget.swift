import HuddleCrypto
import HuddleProtocol
import HuddleWire

/// Datagrams from a TURN server (docs/PROTOCOL.md 10.1): whatever arrives from the server's address goes through
/// `StunMessage` and a `TurnClient` with requests in flight. A message that decodes must decode again, with the same
/// attributes, after it is encoded; the client must never deliver bytes outside the datagram, nor believe an answer
/// whose integrity it cannot verify (the fuzzer does not know the key, so no input may grant an allocation). The same
/// bytes also arrive as a TCP stream, cut in two where the first byte says, through `TurnStreamFramer` into a client
/// over TCP: every frame stays inside the stream, and the framer never holds more than one frame.
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
            server: TurnServerAddress(server, transport: .udp),
            credentials: TurnCredentials(username: "ada", password: "secret"), now: .zero)
        client.handleTimeout(now: .zero, using: &random)
        client.bindChannel(to: NetworkAddress(ipv4: 192, 0, 2, 99, port: 5000), now: .zero, using: &random)
        var copy = Array(input)
        copy.withUnsafeMutableBytes { datagram in
            if let delivered = client.handle(datagram, now: .zero, using: &random) {
                precondition(delivered.payload.upperBound <= datagram.count, "payload outside the datagram")
            }
        }
        precondition(client.relayedAddress == nil, "an unauthenticated answer granted an allocation")
        stream(input)
    }

    /// The input as the bytes of a TCP connection to the server, in two chunks.
    static func stream(_ input: UnsafeRawBufferPointer) {
        var random = ChaChaRandomGenerator(seed: 2)
        var client = TurnClient(
            server: TurnServerAddress(server, transport: .tcp),
            credentials: TurnCredentials(username: "ada", password: "secret"), now: .zero)
        client.handleTimeout(now: .zero, using: &random)
        client.streamOpened(now: .zero, using: &random)
        var framer = TurnStreamFramer()
        var bytes = Array(input)
        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % bytes.count
        bytes.withUnsafeMutableBytes { raw in
            for chunk in [raw[0..<cut], raw[cut...]] {
                do {
                    try framer.consume(UnsafeMutableRawBufferPointer(rebasing: chunk)) { frame in
                        if let delivered = client.handle(frame, now: .zero, using: &random) {
                            precondition(delivered.payload.upperBound <= frame.count, "payload outside the frame")
                        }
                    }
                } catch {
                    return
                }
            }
        }
        precondition(framer.bufferedBytes < TurnStreamFramer.maxFrameLength, "the framer holds more than a frame")
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
