import HuddleWire

/// What can go wrong in the protocol core. Each case names what happened in words a person can act on.
///
/// Violations by an authenticated peer (``protocolViolation(_:)``) close that peer's connection with
/// `CloseCode.protocolViolation` and affect nothing else; unauthenticated input never produces an error at all
/// (it is dropped and counted).
public enum ProtocolError: Error, Hashable, Sendable {
    /// An authenticated peer broke the protocol.
    case protocolViolation(ProtocolViolation)
    /// The handshake got no answer within the retry budget (90 s).
    case handshakeTimeout
    /// The peer was silent for longer than the idle timeout.
    case idleTimeout
    /// The peer opened a new connection (a handshake that does not continue this one: it restarted, or its side of
    /// the connection ended), which replaced this one.
    case superseded
    /// The peer refused the handshake because it speaks another protocol revision: `ours` is this endpoint's Noise
    /// prologue, `theirs` the one the peer named (for Huddle nodes, `huddle/N`). Nothing was exchanged; the
    /// connection never opened.
    case incompatibleProtocol(ours: [UInt8], theirs: [UInt8])
    /// The peer closed the connection with this code and reason.
    case closedByPeer(code: CloseCode, reason: String)
    /// A message exceeds the 256 KiB limit.
    case messageTooLarge(size: Int, limit: Int)
    /// A bounded queue is full; try again when the `Connection` reports room.
    case queueFull(limit: Int)
    /// The connection is closed; nothing more can be sent on it.
    case connectionClosed
    /// The peer's static key was never added with `Endpoint.addPeer(_:)`.
    case unknownPeer
    /// The endpoint already holds ``ProtocolLimits/maxAdmissions`` open admissions (invitations).
    case admissionLimitReached(limit: Int)
}

/// The ways an authenticated peer can break the protocol. Each closes the connection with
/// `CloseCode.protocolViolation` (or the code named in the case's documentation).
public enum ProtocolViolation: Hashable, Sendable {
    /// The decrypted payload did not decode (the wire error says why).
    case malformedFrame(WireError)
    /// An ACK acknowledged a packet number that was never sent.
    case acknowledgedUnsentPacket(UInt64)
    /// A message fragment lies outside its message, or its total length disagrees with earlier fragments.
    case fragmentOutOfBounds(channel: UInt8, sequence: UInt64)
    /// Two fragments of one message carry different bytes for the same offsets.
    case inconsistentFragmentData(channel: UInt8, sequence: UInt64)
    /// A message sequence number jumped further ahead than the reassembly window allows.
    case sequenceGapTooLarge(channel: UInt8, sequence: UInt64, next: UInt64)
    /// The peer opened more incomplete messages, or more reassembly bytes, than it was allowed.
    case reassemblyBudgetExceeded(limit: Int)
    /// The peer sent more reliable data than the flow-control credit it was given.
    case flowControlExceeded(limit: UInt64)
}
