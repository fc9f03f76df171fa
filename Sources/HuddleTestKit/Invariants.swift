import HuddleProtocol
import HuddleWire

/// The invariant checkers every scenario installs.
public enum Invariants {
    /// Installs the delivery, nonce and buffer-limit checkers on `net`.
    public static func install(on net: inout SimulatedNetwork<EndpointNode>) {
        net.addChecker("delivered exactly once, in order, byte-identical") { net in
            for index in 0..<net.nodeCount {
                if let violation = net.node(index)?.violations.first { return "node \(index): \(violation)" }
            }
            return nil
        }
        installNonceLedger(on: &net)
        net.addChecker("buffers within limits") { net in
            for index in 0..<net.nodeCount {
                guard let endpoint = net.node(index)?.endpoint else { continue }
                for id in endpoint.connectionIDs {
                    guard let connection = endpoint.connection(id) else { continue }
                    if let problem = connection.limitViolation { return "node \(index) \(id): \(problem)" }
                }
            }
            return nil
        }
    }
}

extension Invariants {
    /// Installs the (key, nonce) ledger on any simulated network (journal, membership and churn simulations too): a
    /// transport packet number sent twice under one receiver index fails the run (TEST-MATRIX T8, R-cases).
    public static func installNonceLedger<Node: SimulatedNode>(on net: inout SimulatedNetwork<Node>) {
        let ledger = NonceLedger()
        net.observeTransmits { source, transmit in ledger.record(source: source, transmit: transmit) }
        net.addChecker("no (key, nonce) pair used twice") { _ in ledger.firstReuse }
    }
}

/// Records every transport datagram's (sender, receiver index, packet number): the key is fixed by the sender and
/// receiver index, the nonce is the packet number, so a repeat means a (key, nonce) pair was used twice.
final class NonceLedger: @unchecked Sendable {
    private struct Use: Hashable {
        var source: Int
        var destination: NetworkAddress
        var receiverIndex: UInt32
        var packetNumber: UInt64
    }

    private var uses = Set<Use>()
    private(set) var firstReuse: String?

    func record(source: Int, transmit: SimulatedTransmit) {
        guard transmit.datagram.first == PacketType.transportData.rawValue,
            let header = transmit.datagram.withUnsafeBytes({ try? TransportHeader(decoding: $0) })
        else { return }
        let use = Use(
            source: source, destination: transmit.destination, receiverIndex: header.receiverIndex.rawValue,
            packetNumber: header.packetNumber.rawValue)
        if !uses.insert(use).inserted, firstReuse == nil {
            firstReuse =
                "node \(source) reused packet number \(use.packetNumber) under receiver index \(use.receiverIndex)"
        }
    }
}
