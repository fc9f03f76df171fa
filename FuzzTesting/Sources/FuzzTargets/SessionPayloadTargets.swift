import Foundation
import HuddleCrypto
import HuddleSession

@testable import Huddle

/// Messenger envelopes (docs/PROTOCOL.md 8.3): what decodes re-encodes to the same bytes.
public enum EnvelopeTarget: FuzzTarget {
    public static let name = "envelope"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let envelope = MessageEnvelope(decoding: bytes) else { return }
        let encoded = envelope.encoded()
        guard let again = MessageEnvelope(decoding: encoded) else {
            preconditionFailure("a decoded envelope does not decode after re-encoding")
        }
        precondition(
            again.typeName == envelope.typeName && again.payload == envelope.payload && again.kind == envelope.kind,
            "an envelope does not round-trip")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        [
            (
                "codable",
                MessageEnvelope(kind: .codable, typeName: "huddle.ChatLine", payload: Array("{\"text\":\"hi\"}".utf8))
                    .encoded()
            ),
            ("raw", MessageEnvelope(kind: .raw, typeName: "bytes", payload: [1, 2, 3]).encoded()),
            (
                "long-name",
                MessageEnvelope(kind: .codable, typeName: String(repeating: "n", count: 200), payload: []).encoded()
            ),
        ]
    }
}

/// A small activity for the activity target.
struct FuzzActivity: GroupActivity {
    static let activityIdentifier = "org.huddle.fuzz"
    var topic: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: topic) }
}

/// Activity payloads (the shared activity's JSON, docs/PROTOCOL.md 8.2): the identifier and a typed decode give a
/// typed error or a value, never a crash; what decodes re-encodes and decodes to the same value.
public enum ActivityTarget: FuzzTarget {
    public static let name = "activity"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        _ = ActivityCoding.identifier(of: bytes)
        guard let activity = try? ActivityCoding.decode(bytes, as: FuzzActivity.self) else { return }
        guard let encoded = try? ActivityCoding.encode(activity),
            let again = try? ActivityCoding.decode(encoded, as: FuzzActivity.self)
        else { preconditionFailure("a decoded activity does not round-trip") }
        precondition(again.topic == activity.topic, "an activity does not round-trip")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        [("activity", try ActivityCoding.encode(FuzzActivity(topic: "fuzzing")))]
    }
}

/// Tickets (docs/PROTOCOL.md 8.1), as text: what parses prints as a ticket that parses to the same fields.
public enum TicketTarget: FuzzTarget {
    public static let name = "ticket"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let text = String(decoding: input, as: UTF8.self)
        guard let invitation = try? Invitation(parsing: text) else { return }
        guard let again = try? Invitation(parsing: invitation.ticket) else {
            preconditionFailure("a parsed ticket does not parse after printing")
        }
        precondition(
            again.members == invitation.members && again.relays == invitation.relays
                && again.session == invitation.session && again.inviterName == invitation.inviterName,
            "a ticket does not round-trip")
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        var random = SystemRandomGenerator()
        let identity = Identity(using: &random)
        func ticket(relays: [NetworkAddress]) -> [UInt8] {
            let invitation = Invitation(
                session: SessionID(bytes: [UInt8](0..<16))!, secret: SecureBytes(count: 32, using: &random),
                expiresAt: Date(timeIntervalSince1970: 1_900_000_000),
                inviterSigningKey: identity.publicIdentity.signingKey, inviterName: "ada",
                members: [
                    Invitation.Member(
                        staticKey: identity.agreementKey.publicKey,
                        address: NetworkAddress(ipv4: 192, 0, 2, 1, port: 7000))
                ], relays: relays)
            return Array(invitation.ticket.utf8)
        }
        return [
            ("v1", ticket(relays: [])),
            ("v2-relays", ticket(relays: [NetworkAddress(ipv4: 198, 51, 100, 4, port: 3478)])),
        ]
    }
}

/// Local-network announcements (docs/PROTOCOL.md §11): anyone on the network segment can send them. What decodes
/// re-encodes to the same bytes, and its ticket is parsed as `huddle join --lan` would.
public enum NearbyBeaconTarget: FuzzTarget {
    public static let name = "nearby"

    public static func run(_ input: UnsafeRawBufferPointer) {
        let bytes = Array(input)
        guard let beacon = NearbyBeacon(decoding: bytes) else { return }
        precondition(beacon.encoded() == bytes, "a beacon does not round-trip")
        _ = try? Invitation(parsing: beacon.ticket)
    }

    public static func seeds() throws -> [(name: String, bytes: [UInt8])] {
        try TicketTarget.seeds().map { seed in
            (
                seed.name,
                NearbyBeacon(name: "Ana's canvas", ticket: String(decoding: seed.bytes, as: UTF8.self)).encoded()
            )
        }
    }
}
