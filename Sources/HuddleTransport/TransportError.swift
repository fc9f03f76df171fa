import HuddleProtocol
import HuddleWire
import NIOCore

#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// What can go wrong in the transport layer. Each case says what happened in words a person can act on.
public enum TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The socket could not be bound (address in use, no such interface, permission denied, ...).
    case bindFailed(host: String, port: Int, reason: String)
    /// Another socket already holds the UDP port (`holder` names the process when the system tells: "huddle (pid
    /// 4242)"). Huddle never shares a port: two nodes on one port would each get part of the other's datagrams.
    case addressInUse(host: String, port: Int, holder: String?)
    /// The configuration cannot work (the message says which setting and why).
    case invalidConfiguration(String)
    /// The connection is closed (or never existed); nothing more can be sent on it.
    case connectionClosed(ConnectionID)
    /// A message is larger than the protocol allows.
    case messageTooLarge(size: Int, limit: Int)
    /// The driver was closed (``UDPEndpointDriver/close()``) or its channel failed.
    case driverClosed
    /// The task waiting for send-window space was cancelled; the message was not queued.
    case cancelled
    /// The protocol core refused the operation.
    case protocolError(ProtocolError)

    public var description: String {
        switch self {
        case .bindFailed(let host, let port, let reason):
            return "could not bind UDP \(host) port \(port): \(reason)"
        case .addressInUse(let host, let port, let holder):
            return "UDP port \(port) on \(host) is already in use"
                + (holder.map { " by \($0)" } ?? " by another socket")
                + "; choose another port (or 0 for any free one), or stop the process that holds it"
        case .invalidConfiguration(let message):
            return "invalid transport configuration: \(message)"
        case .connectionClosed(let id):
            return "connection \(id) is closed; nothing more can be sent on it"
        case .messageTooLarge(let size, let limit):
            return "message of \(size) bytes exceeds the \(limit)-byte limit"
        case .driverClosed:
            return "the UDP endpoint driver is closed"
        case .cancelled:
            return "the send was cancelled while waiting for window space; the message was not queued"
        case .protocolError(let error):
            return "the protocol core refused the operation: \(error)"
        }
    }
}

extension TransportError {
    /// The error for a failed bind of `host:port`: ``addressInUse(host:port:holder:)`` when the port is taken (with
    /// its holder when it can be found), else ``bindFailed(host:port:reason:)``.
    static func binding(_ error: any Error, host: String, port: Int) -> TransportError {
        if let error = error as? IOError, error.errnoCode == EADDRINUSE {
            return .addressInUse(host: host, port: port, holder: PortHolder.describe(port: port))
        }
        return .bindFailed(host: host, port: port, reason: "\(error)")
    }
}
