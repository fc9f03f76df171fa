/// What a ``TurnClient`` reports to its owner.
public enum TurnEvent: Hashable, Sendable {
    /// The server granted an allocation: peers that send to `relayed` reach this node (if permitted), and the server
    /// saw this node at `mapped` (a reflexive address).
    case allocated(relayed: NetworkAddress, mapped: NetworkAddress)
    /// The allocation failed or was lost; the client tries again after ``ProtocolLimits/turnRetryAfterFailure``.
    case failed(TurnFailure)
}

/// Why a TURN allocation failed.
public enum TurnFailure: Hashable, Sendable, CustomStringConvertible {
    /// The server refused the credentials (401 after an authenticated request).
    case unauthorized
    /// The server answered a request with another error: its STUN error code and reason phrase.
    case refused(code: Int, reason: String)
    /// No answer to a request after ``ProtocolLimits/turnRequestAttempts`` sends.
    case timedOut
    /// The server's success response had no usable relayed address, or failed its MESSAGE-INTEGRITY.
    case invalidResponse
    /// The TCP connection to the server could not be opened.
    case connectionFailed
    /// The TCP connection to the server closed (or lost its framing), and the allocation with it.
    case connectionClosed

    public var description: String {
        switch self {
        case .unauthorized: return "the TURN server refused the credentials (401)"
        case .refused(let code, let reason): return "the TURN server answered \(code) \(reason)"
        case .timedOut: return "the TURN server did not answer"
        case .invalidResponse: return "the TURN server's answer was not valid"
        case .connectionFailed: return "could not connect to the TURN server over TCP"
        case .connectionClosed: return "the TCP connection to the TURN server closed"
        }
    }
}
