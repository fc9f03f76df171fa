import HuddleCrypto
import HuddleWire

@testable import HuddleProtocol

/// The server side of TURN, scripted by a test: it reads a client's requests, checks their MESSAGE-INTEGRITY under
/// the long-term key of `username:realm:password`, and writes the answers a test chooses, signed the same way.
struct ScriptedTurnServer {
    let realm = "huddle.test"
    var nonce = "nonce-1"
    var password = "secret"
    let username = "ada"
    var relayed = NetworkAddress(ipv4: 203, 0, 113, 7, port: 49_152)
    let mapped = NetworkAddress(ipv4: 198, 51, 100, 2, port: 40_000)

    var key: [UInt8] { MD5.hash(Array("\(username):\(realm):\(password)".utf8)) }

    /// Decodes a request and says whether its integrity verifies under this server's key (`nil`: it has none).
    func read(_ bytes: [UInt8]) throws -> (message: StunMessage, authentic: Bool?) {
        let message = try StunMessage(decoding: bytes)
        guard let integrity = message.integrity else { return (message, nil) }
        return (message, HMACSHA1.isValidAuthenticationCode(integrity.tag, for: integrity.covered, key: key))
    }

    /// The 401 that hands out the realm and the nonce.
    func challenge(_ request: StunMessage, code: Int = 401) -> [UInt8] {
        StunMessage(
            method: request.method, messageClass: .error, transactionID: request.transactionID,
            attributes: [
                .error(code: code, reason: code == 401 ? "Unauthorized" : "Stale Nonce"),
                .text(StunAttribute.realm, realm), .text(StunAttribute.nonce, nonce),
            ]
        ).encoded(fingerprint: true)
    }

    /// A signed success response to `request` with `attributes`.
    func success(
        _ request: StunMessage, _ attributes: [StunAttribute] = [], signedWith key: [UInt8]? = nil
    )
        -> [UInt8]
    {
        let signing = key ?? self.key
        return StunMessage(
            method: request.method, messageClass: .success, transactionID: request.transactionID,
            attributes: attributes
        ).encoded(integrity: { HMACSHA1.authenticationCode(for: $0, key: signing) }, fingerprint: true)
    }

    /// A signed Allocate success naming ``relayed`` and ``mapped`` with `lifetime` seconds.
    func allocated(_ request: StunMessage, lifetime: UInt32 = 600) -> [UInt8] {
        success(
            request,
            [
                .xorAddress(StunAttribute.xorRelayedAddress, relayed.wireAddress, transactionID: request.transactionID),
                .xorAddress(StunAttribute.xorMappedAddress, mapped.wireAddress, transactionID: request.transactionID),
                .uint32(StunAttribute.lifetime, lifetime),
            ])
    }
}

extension TurnClient {
    /// Hands the client one datagram from the server (a copy), returning what it delivered.
    mutating func receive(
        _ bytes: [UInt8], now: Instant, random: inout ChaChaRandomGenerator
    ) -> (
        peer: NetworkAddress, payload: [UInt8]
    )? {
        var copy = bytes
        return copy.withUnsafeMutableBytes { raw in
            handle(raw, now: now, using: &random).map { ($0.peer, Array(raw[$0.payload])) }
        }
    }

    /// Every datagram the client has to send.
    mutating func drain() -> [[UInt8]] {
        var all: [[UInt8]] = []
        while let datagram = pollTransmit() { all.append(datagram) }
        return all
    }
}
