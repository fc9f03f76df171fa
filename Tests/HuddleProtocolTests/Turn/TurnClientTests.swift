import HuddleCrypto
import HuddleWire
import Testing

@testable import HuddleProtocol

@Suite("TURN client core")
struct TurnClientTests {
    let server = NetworkAddress(ipv4: 192, 0, 2, 10, port: 3478)
    let peer = NetworkAddress(ipv4: 192, 0, 2, 99, port: 5000)

    /// A client of ``server`` that has sent nothing yet.
    func freshClient(password: String = "secret") -> TurnClient {
        TurnClient(
            server: TurnServerAddress(server, transport: .udp),
            credentials: TurnCredentials(username: "ada", password: password), now: .zero)
    }

    /// A client taken through the 401 to an allocation; returns it with the time and generator it used.
    func allocatedClient(
        _ turn: ScriptedTurnServer = ScriptedTurnServer()
    ) throws -> (
        TurnClient, Instant, ChaChaRandomGenerator
    ) {
        var random = ChaChaRandomGenerator(seed: 5)
        let now = Instant.zero
        var client = freshClient()
        client.handleTimeout(now: now, using: &random)
        let first = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.challenge(first), now: now, random: &random)
        let second = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.allocated(second), now: now, random: &random)
        return (client, now, random)
    }

    @Test(
        "Allocate: unauthenticated first, then under MD5(username:realm:password) after the 401; the grant is an event")
    func allocation() throws {
        let turn = ScriptedTurnServer()
        var random = ChaChaRandomGenerator(seed: 1)
        var client = freshClient()
        #expect(client.drain().isEmpty)
        client.handleTimeout(now: .zero, using: &random)
        let first = try turn.read(try #require(client.drain().first))
        #expect(first.message.method == .allocate && first.message.messageClass == .request)
        #expect(first.authentic == nil)
        #expect(first.message.attribute(StunAttribute.requestedTransport)?.value == [17, 0, 0, 0])

        _ = client.receive(turn.challenge(first.message), now: .zero, random: &random)
        let second = try turn.read(try #require(client.drain().first))
        #expect(second.authentic == true)
        #expect(second.message.attribute(StunAttribute.username)?.text == "ada")
        #expect(second.message.attribute(StunAttribute.realm)?.text == turn.realm)
        #expect(second.message.attribute(StunAttribute.nonce)?.text == turn.nonce)

        _ = client.receive(turn.allocated(second.message), now: .zero, random: &random)
        #expect(client.pollEvent() == .allocated(relayed: turn.relayed, mapped: turn.mapped))
        #expect(client.relayedAddress == turn.relayed)
        #expect(client.mappedAddress == turn.mapped)
    }

    @Test("A success signed with another key, or not at all, is not believed")
    func forgedSuccess() throws {
        let turn = ScriptedTurnServer()
        var random = ChaChaRandomGenerator(seed: 2)
        var client = freshClient()
        client.handleTimeout(now: .zero, using: &random)
        let first = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.challenge(first), now: .zero, random: &random)
        let second = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(
            turn.success(second, signedWith: Array(repeating: 1, count: 16)), now: .zero, random: &random)
        let unsigned = StunMessage(method: .allocate, messageClass: .success, transactionID: second.transactionID)
        _ = client.receive(unsigned.encoded(), now: .zero, random: &random)
        #expect(client.pollEvent() == nil)
        #expect(client.relayedAddress == nil)
        #expect(client.datagramsDropped == 2)
        // The genuine answer still counts.
        _ = client.receive(turn.allocated(second), now: .zero, random: &random)
        #expect(client.relayedAddress == turn.relayed)
    }

    @Test("438 (stale nonce) sends the request again with the new nonce; a 401 after authenticating is a typed failure")
    func staleNonceAndWrongPassword() throws {
        var turn = ScriptedTurnServer()
        var (client, now, random) = try allocatedClient(turn)
        _ = client.pollEvent()
        client.bindChannel(to: peer, now: now, using: &random)
        let bind = try turn.read(try #require(client.drain().first)).message
        turn.nonce = "nonce-2"
        _ = client.receive(turn.challenge(bind, code: 438), now: now, random: &random)
        let again = try turn.read(try #require(client.drain().first))
        #expect(again.message.method == .channelBind)
        #expect(again.message.attribute(StunAttribute.nonce)?.text == "nonce-2")
        #expect(again.authentic == true)

        turn.password = "other"
        var wrong = freshClient(password: "wrong")
        wrong.handleTimeout(now: now, using: &random)
        let first = try turn.read(try #require(wrong.drain().first)).message
        _ = wrong.receive(turn.challenge(first), now: now, random: &random)
        let second = try turn.read(try #require(wrong.drain().first))
        #expect(second.authentic == false)
        _ = wrong.receive(turn.challenge(second.message), now: now, random: &random)
        #expect(wrong.pollEvent() == .failed(.unauthorized))
        #expect(wrong.relayedAddress == nil)
    }

    @Test("A channel: ChannelBind names 0x4000 and the peer; once confirmed, ChannelData from it is the peer's data")
    func channel() throws {
        let turn = ScriptedTurnServer()
        var (client, now, random) = try allocatedClient(turn)
        client.bindChannel(to: peer, now: now, using: &random)
        let bind = try turn.read(try #require(client.drain().first)).message
        #expect(bind.method == .channelBind)
        #expect(bind.attribute(StunAttribute.channelNumber)?.value == [0x40, 0x00, 0, 0])
        let named = try bind.attribute(StunAttribute.xorPeerAddress)?.xorAddress(transactionID: bind.transactionID)
        #expect(named == peer.wireAddress)
        #expect(client.channel(for: peer) == nil)
        _ = client.receive(turn.success(bind), now: now, random: &random)
        #expect(client.channel(for: peer) == 0x4000)

        let delivered = client.receive([0x40, 0x00, 0x00, 0x03, 7, 8, 9, 0], now: now, random: &random)
        #expect(delivered?.peer == peer && delivered?.payload == [7, 8, 9])
        // An unbound channel number carries nothing, and neither do bytes that are neither STUN nor ChannelData.
        #expect(client.receive([0x40, 0x01, 0x00, 0x01, 7], now: now, random: &random) == nil)
        #expect(client.receive([1, 2, 3], now: now, random: &random) == nil)
        #expect(client.datagramsDropped == 2)
    }

    @Test("A Data indication delivers its peer and bytes; a Send indication carries ours")
    func indications() throws {
        var (client, now, random) = try allocatedClient()
        let transactionID: [UInt8] = Array(0..<12)
        let data = StunMessage(
            method: .data, messageClass: .indication, transactionID: transactionID,
            attributes: [
                .xorAddress(StunAttribute.xorPeerAddress, peer.wireAddress, transactionID: transactionID),
                StunAttribute(type: StunAttribute.data, value: [1, 2, 3, 4, 5]),
            ]
        ).encoded()
        let delivered = client.receive(data, now: now, random: &random)
        #expect(delivered?.peer == peer && delivered?.payload == [1, 2, 3, 4, 5])

        let send = [UInt8]([9, 9]).withUnsafeBytes { client.sendIndication($0, to: peer, using: &random) }
        let message = try StunMessage(decoding: send)
        #expect(message.method == .send && message.messageClass == .indication)
        #expect(message.attribute(StunAttribute.data)?.value == [9, 9])
        #expect(
            try message.attribute(StunAttribute.xorPeerAddress)?.xorAddress(transactionID: message.transactionID)
                == peer.wireAddress)
    }

    @Test("Permissions asked before the allocation go out with it; each is refreshed a minute before its 5 minutes end")
    func permissions() throws {
        let turn = ScriptedTurnServer()
        var random = ChaChaRandomGenerator(seed: 3)
        var client = freshClient()
        client.permit(peer, now: .zero, using: &random)
        client.handleTimeout(now: .zero, using: &random)
        let first = try turn.read(try #require(client.drain().first)).message
        #expect(first.method == .allocate)
        _ = client.receive(turn.challenge(first), now: .zero, random: &random)
        let second = try turn.read(try #require(client.drain().first)).message
        _ = client.receive(turn.allocated(second), now: .zero, random: &random)
        let permission = try turn.read(try #require(client.drain().first))
        #expect(permission.message.method == .createPermission && permission.authentic == true)
        let ip = try permission.message.attribute(StunAttribute.xorPeerAddress)?.xorAddress(
            transactionID: permission.message.transactionID)
        #expect(ip?.bytes == peer.addressBytes)
        _ = client.receive(turn.success(permission.message), now: .zero, random: &random)

        let refreshAt = Instant.zero + .seconds(240)
        #expect(client.nextDeadline <= refreshAt)
        client.handleTimeout(now: refreshAt - .seconds(1), using: &random)
        #expect(client.drain().allSatisfy { (try? StunMessage(decoding: $0).method) != .createPermission })
        client.handleTimeout(now: refreshAt, using: &random)
        #expect(client.drain().contains { (try? StunMessage(decoding: $0).method) == .createPermission })
    }

    @Test(
        "An unanswered request goes again at 0.5, 1, 2 ... s; after 7 sends the allocation fails and is retried 30 s on"
    )
    func retransmission() throws {
        var random = ChaChaRandomGenerator(seed: 4)
        var client = freshClient()
        var now = Instant.zero
        client.handleTimeout(now: now, using: &random)
        var sends = client.drain()
        let first = sends[0]
        var times: [Duration] = [.zero]
        // Bounded: a deadline that does not move would otherwise spin here.
        for _ in 0..<100 where client.relayedAddress == nil && now < .zero + .seconds(120) {
            if let event = client.pollEvent() {
                #expect(event == .failed(.timedOut))
                break
            }
            #expect(client.nextDeadline > now || times.count == 1)
            now = client.nextDeadline
            client.handleTimeout(now: now, using: &random)
            let out = client.drain()
            if !out.isEmpty { times.append(now - .zero) }
            sends += out
        }
        let allocates = sends.filter { $0 == first }
        #expect(allocates.count == ProtocolLimits.turnRequestAttempts)
        #expect(Array(times.prefix(4)) == [.zero, .milliseconds(500), .milliseconds(1500), .milliseconds(3500)])
        #expect(client.relayedAddress == nil)
        let failedAt = now
        client.handleTimeout(now: failedAt + .seconds(29), using: &random)
        #expect(client.drain().allSatisfy { (try? StunMessage(decoding: $0).method) != .allocate })
        client.handleTimeout(now: failedAt + .seconds(30), using: &random)
        #expect(client.drain().contains { (try? StunMessage(decoding: $0).method) == .allocate })
    }

    @Test("The allocation is refreshed a minute before its lifetime ends; a quiet client sends a keepalive every 15 s")
    func refreshAndKeepalive() throws {
        var (client, now, random) = try allocatedClient()
        _ = client.drain()
        client.handleTimeout(now: now + .seconds(15), using: &random)
        let keepalive = try StunMessage(decoding: try #require(client.drain().first))
        #expect(keepalive.method == .binding && keepalive.messageClass == .indication)
        now = now + .seconds(540)
        client.handleTimeout(now: now, using: &random)
        let refresh = client.drain().compactMap { try? StunMessage(decoding: $0) }.first { $0.method == .refresh }
        #expect(try refresh?.attribute(StunAttribute.lifetime)?.uint32() == 600)
    }

    @Test("At the channel limit (256) the oldest binding is forgotten; the others keep their numbers")
    func channelLimit() throws {
        let turn = ScriptedTurnServer()
        var (client, now, random) = try allocatedClient(turn)
        let peers = (0...ProtocolLimits.maxTurnChannels).map {
            NetworkAddress(ipv4: 10, 0, UInt8($0 >> 8), UInt8($0 & 0xFF), port: 7000)
        }
        for peer in peers {
            client.bindChannel(to: peer, now: now, using: &random)
            for bytes in client.drain() {
                let request = try turn.read(bytes).message
                _ = client.receive(turn.success(request), now: now, random: &random)
            }
        }
        #expect(client.channel(for: peers[0]) == nil)
        #expect(client.channel(for: peers[1]) == 0x4001)
        #expect(
            client.channel(for: peers[ProtocolLimits.maxTurnChannels]) == 0x4000
                + UInt16(ProtocolLimits.maxTurnChannels))
    }

    @Test("RFC 5769 2.1 and 2.2: MESSAGE-INTEGRITY verifies with HMAC-SHA1 under the short-term password")
    func rfc5769Integrity() throws {
        let password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)
        let request = try StunMessage(
            decoding: try loadHex(
                "000100582112a442b7e7a701bc34d686fa87dfae802200105354554e207465737420636c69656e74002400046e0001ff"
                    + "80290008932ff9b151263b36000600096576746a3a68367659202020000800149aeaa70cbfd8cb56781ef2b5b2d3f2"
                    + "49c1b571a280280004e57a3bcf"))
        let response = try StunMessage(
            decoding: try loadHex(
                "0101003c2112a442b7e7a701bc34d686fa87dfae8022000b7465737420766563746f7220002000080001a147e112a643"
                    + "000800142b91f599fd9e90c38c7489f92af9ba53f06be7d780280004c07d4c96"))
        for message in [request, response] {
            let integrity = try #require(message.integrity)
            #expect(HMACSHA1.isValidAuthenticationCode(integrity.tag, for: integrity.covered, key: password))
            #expect(
                !HMACSHA1.isValidAuthenticationCode(integrity.tag, for: integrity.covered, key: password.dropLast()))
        }
    }

    private func loadHex(_ text: String) throws -> [UInt8] {
        let digits = Array(text.utf8)
        return stride(from: 0, to: digits.count, by: 2).map {
            UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)!
        }
    }
}
