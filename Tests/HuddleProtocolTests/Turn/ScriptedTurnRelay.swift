import HuddleCrypto
import HuddleWire

@testable import HuddleProtocol

/// A TURN server for endpoint tests: it answers one client's requests (the 401 first, then signed successes for
/// Allocate, Refresh, CreatePermission and ChannelBind) and relays its data to peers and theirs to it, as ChannelData
/// once a channel is bound and as Data indications before. It checks nothing else (permissions, lifetimes): the
/// endpoint's side is what the tests look at.
struct ScriptedTurnRelay {
    var turn: ScriptedTurnServer
    private var channels: [UInt16: NetworkAddress] = [:]
    /// The requests answered, by method.
    private(set) var answered: [StunMethod] = []

    init(relayed: NetworkAddress) {
        turn = ScriptedTurnServer()
        turn.relayed = relayed
    }

    var relayed: NetworkAddress { turn.relayed }

    /// One message from the client: the answers to send back, and the datagrams to deliver to peers (from
    /// ``relayed``).
    mutating func fromClient(
        _ bytes: [UInt8]
    ) -> (
        toClient: [[UInt8]], toPeers: [(NetworkAddress, [UInt8])]
    ) {
        if let (number, range) = try? bytes.withUnsafeBytes({ try ChannelData.parse($0) }) {
            guard let peer = channels[number] else { return ([], []) }
            return ([], [(peer, Array(bytes[range]))])
        }
        guard let (message, authentic) = try? turn.read(bytes) else { return ([], []) }
        if message.messageClass == .indication {
            guard message.method == .send, let peer = Self.peer(of: message),
                let data = message.attribute(StunAttribute.data)?.value
            else { return ([], []) }
            return ([], [(peer, data)])
        }
        guard authentic == true else { return ([turn.challenge(message)], []) }
        answered.append(message.method)
        switch message.method {
        case .allocate: return ([turn.allocated(message)], [])
        case .channelBind:
            if let value = message.attribute(StunAttribute.channelNumber)?.value, value.count >= 2,
                let peer = Self.peer(of: message)
            {
                channels[UInt16(value[0]) << 8 | UInt16(value[1])] = peer
            }
            return ([turn.success(message)], [])
        case .refresh:
            return ([turn.success(message, [.uint32(StunAttribute.lifetime, 600)])], [])
        default: return ([turn.success(message)], [])
        }
    }

    /// A datagram `peer` sent to ``relayed``, as the client receives it.
    func fromPeer(_ bytes: [UInt8], peer: NetworkAddress) -> [UInt8] {
        if let (number, _) = channels.first(where: { $0.value == peer }) {
            var framed = [UInt8](repeating: 0, count: ChannelData.headerLength) + bytes
            framed.withUnsafeMutableBytes { ChannelData.writeHeader(channel: number, length: bytes.count, into: $0) }
            return framed
        }
        let transactionID = [UInt8](repeating: 3, count: 12)
        return StunMessage(
            method: .data, messageClass: .indication, transactionID: transactionID,
            attributes: [
                .xorAddress(StunAttribute.xorPeerAddress, peer.wireAddress, transactionID: transactionID),
                StunAttribute(type: StunAttribute.data, value: bytes),
            ]
        ).encoded()
    }

    private static func peer(of message: StunMessage) -> NetworkAddress? {
        guard let attribute = message.attribute(StunAttribute.xorPeerAddress),
            let wire = try? attribute.xorAddress(transactionID: message.transactionID)
        else { return nil }
        return NetworkAddress(wire: wire)
    }
}
