// The types that appear in `Huddle`'s public signatures (and what an app needs to make an identity) come from the
// lower layers. Re-exporting exactly these declarations lets an app write `import Huddle` alone, without pulling every
// public name of the protocol core and the transport into its namespace.

@_exported import enum HuddleCrypto.CryptoError
@_exported import struct HuddleCrypto.Ed25519PublicKey
@_exported import struct HuddleCrypto.Identity
@_exported import enum HuddleCrypto.IdentityFile
@_exported import enum HuddleCrypto.IdentityFileProblem
@_exported import struct HuddleCrypto.PublicIdentity
@_exported import protocol HuddleCrypto.RandomBytesGenerator
@_exported import struct HuddleCrypto.X25519PublicKey
// Reached through the re-exported transport types above, so re-exported deliberately rather than left nameable only
// with `import HuddleProtocol`: `TransportError.connectionClosed` names a `ConnectionID`, `.protocolError` a
// `ProtocolError` (its cases carry a `ProtocolViolation` or a `CloseCode`), and `TransportStatistics.endpoint` is an
// `EndpointStatistics`. (`HuddleNode.CongestionControl` is a typealias of the protocol core's choice of controller,
// so that one enum is named through `Huddle` without re-exporting the connection's whole configuration.)
@_exported import struct HuddleProtocol.ConnectionID
@_exported import struct HuddleProtocol.EndpointStatistics
@_exported import struct HuddleProtocol.NetworkAddress
// What ``HuddleNode/portMappings()`` reports.
@_exported import struct HuddleProtocol.PortMapping
@_exported import enum HuddleProtocol.PortMappingFailure
@_exported import enum HuddleProtocol.PortMappingProtocol
@_exported import enum HuddleProtocol.ProtocolError
@_exported import enum HuddleProtocol.ProtocolViolation
// What ``HuddleNode/Configuration/turnServers`` and ``TurnAllocation`` name.
@_exported import struct HuddleProtocol.TurnCredentials
@_exported import enum HuddleProtocol.TurnFailure
@_exported import struct HuddleProtocol.TurnServer
@_exported import enum HuddleProtocol.TurnTransport
@_exported import struct HuddleSession.SessionID
@_exported import struct HuddleTransport.SystemRandomGenerator
@_exported import struct HuddleTransport.TransportConfiguration
@_exported import enum HuddleTransport.TransportError
@_exported import struct HuddleTransport.TransportStatistics
@_exported import struct HuddleWire.CloseCode
