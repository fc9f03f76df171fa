import Foundation
import Huddle
import HuddleWire

/// STUN Binding transactions (RFC 8489) over a ``DoctorSocket``, and the NAT behaviour tests of RFC 5780 built on
/// them, for `huddle doctor`. Requests are sent at once and again 200 and 500 ms later until answered; answers are
/// matched by transaction ID (an answer to a CHANGE-REQUEST comes from another address).
struct StunProbe {
    /// RFC 5780's OTHER-ADDRESS (the server's alternate IP and port) and RESPONSE-ORIGIN, in MAPPED-ADDRESS form.
    static let otherAddress: UInt16 = 0x802C
    static let responseOrigin: UInt16 = 0x802B
    /// RFC 5780's CHANGE-REQUEST: flags 0x04 (answer from the other IP) and 0x02 (from the other port).
    static let changeRequest: UInt16 = 0x0003
    /// RFC 5780's PADDING, which makes a request as large as a path probe needs.
    static let padding: UInt16 = 0x0026

    /// A server's answer to one request.
    struct Answer {
        /// XOR-MAPPED-ADDRESS: where the server saw the request come from.
        var mapped: NetworkAddress?
        /// OTHER-ADDRESS, when the server supports RFC 5780.
        var other: NetworkAddress?
        /// The time from the first send to the answer.
        var rtt: Duration
    }

    let socket: DoctorSocket

    /// Sends each request (a destination and extra attributes) and waits at most `budget` for the answers; returns
    /// them by the request's index. Requests the kernel refuses (larger than the path MTU it knows) get none.
    func transact(_ requests: [(to: NetworkAddress, attributes: [StunAttribute])], budget: Duration) -> [Int: Answer] {
        var random = SystemRandomGenerator()
        let clock = ContinuousClock()
        let start = clock.now
        var pending: [[UInt8]: (index: Int, bytes: [UInt8], to: NetworkAddress)] = [:]
        for (index, request) in requests.enumerated() {
            let transactionID = (0..<12).map { _ in UInt8.random(in: 0...255, using: &random) }
            let bytes = StunMessage(
                method: .binding, messageClass: .request, transactionID: transactionID,
                attributes: request.attributes
            ).encoded(fingerprint: true)
            if socket.send(bytes, to: request.to) { pending[transactionID] = (index, bytes, request.to) }
        }
        var answers: [Int: Answer] = [:]
        var resends: [Duration] = [.milliseconds(200), .milliseconds(500)]
        while !pending.isEmpty, clock.now - start < budget {
            let elapsed = clock.now - start
            if let next = resends.first, elapsed >= next {
                resends.removeFirst()
                for request in pending.values { socket.send(request.bytes, to: request.to) }
                continue
            }
            let wait = min(budget, resends.first ?? budget) - elapsed
            guard let (bytes, _) = socket.receive(timeout: wait),
                let message = try? StunMessage(decoding: bytes), message.messageClass == .success,
                let request = pending.removeValue(forKey: message.transactionID)
            else { continue }
            var mapped: NetworkAddress?
            if let attribute = message.attribute(StunAttribute.xorMappedAddress),
                let wire = try? attribute.xorAddress(transactionID: message.transactionID)
            {
                mapped =
                    wire.family == 4
                    ? NetworkAddress(ipv4: wire.bytes[0], wire.bytes[1], wire.bytes[2], wire.bytes[3], port: wire.port)
                    : NetworkAddress(ipv6: wire.bytes, port: wire.port)
            }
            answers[request.index] = Answer(
                mapped: mapped, other: message.attribute(Self.otherAddress).flatMap { Self.plainAddress($0.value) },
                rtt: clock.now - start)
        }
        return answers
    }

    /// A MAPPED-ADDRESS-form value (reserved byte, family 1 or 2, port, address), unXORed.
    static func plainAddress(_ value: [UInt8]) -> NetworkAddress? {
        guard value.count >= 8 else { return nil }
        let port = UInt16(value[2]) << 8 | UInt16(value[3])
        switch value[1] {
        case 1: return NetworkAddress(ipv4: value[4], value[5], value[6], value[7], port: port)
        case 2 where value.count >= 20: return NetworkAddress(ipv6: Array(value[4..<20]), port: port)
        default: return nil
        }
    }

    /// A CHANGE-REQUEST asking for the answer from the other IP and port (`ip`), or the other port only.
    static func change(ip: Bool) -> StunAttribute {
        StunAttribute(type: changeRequest, value: [0, 0, 0, ip ? 0x06 : 0x02])
    }

    /// PADDING that makes a Binding request (with its FINGERPRINT) `datagramBytes` long.
    static func pad(to datagramBytes: Int) -> StunAttribute {
        // Header 20, PADDING header 4, FINGERPRINT 8.
        StunAttribute(type: padding, value: [UInt8](repeating: 0, count: max(0, datagramBytes - 32)))
    }
}
