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
@_exported import struct HuddleProtocol.NetworkAddress
@_exported import struct HuddleSession.SessionID
@_exported import struct HuddleTransport.SystemRandomGenerator
@_exported import struct HuddleTransport.TransportConfiguration
@_exported import enum HuddleTransport.TransportError
@_exported import struct HuddleTransport.TransportStatistics
