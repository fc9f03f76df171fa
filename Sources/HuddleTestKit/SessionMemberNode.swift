import HuddleCrypto
import HuddleProtocol
import HuddleSession
import HuddleWire

/// A simulated session member: an ``Endpoint`` driven through a ``SessionCore`` (``SessionNode``, and
/// ``JournalNode`` with a journal beside it). What both do alike (sending to a member by its static key, the
/// roster and activity they see) is written once here.
public protocol SessionMemberNode: SimulatedNode {
    /// The protocol core.
    var endpoint: Endpoint { get set }
    /// The session layer, absent until the node starts or joins a session.
    var core: SessionCore? { get }
}

extension SessionMemberNode {
    /// Sends an application message to the member with static key `peer` on its live connection (one still being
    /// set up too); `false` if there is no connection or the queue is full.
    @discardableResult
    public mutating func send(_ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey) -> Bool {
        sendRecorded(bytes, on: channel, to: peer) != nil
    }

    /// Sends like ``send(_:on:to:)`` and returns the connection and sequence number the message got, or `nil`.
    public mutating func sendRecorded(
        _ bytes: [UInt8], on channel: ChannelID, to peer: X25519PublicKey
    ) -> (connection: ConnectionID, sequence: MessageSequence)? {
        guard let id = endpoint.liveConnectionID(for: peer),
            let sequence = try? endpoint.send(bytes, on: channel, to: id)
        else { return nil }
        return (id, sequence)
    }

    /// The static keys of the members this node sees as active (itself included), sorted.
    public var activeKeys: [X25519PublicKey] {
        (core?.membership.activeMembers ?? []).map(\.staticKey).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// The payload of the activity this node sees.
    public var activityPayload: [UInt8]? { core?.membership.activity?.payload }
}
