import Foundation
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

/// The list of sessions heard nearby (`NearbySession.watch()`, discovering `GroupStateObserver`s): appearance,
/// repeats, expiry and its bound.
@Suite("Sessions heard nearby")
struct NearbyListTests {
    static func session(_ name: String, seed: UInt64, expiresAt: Date = .distantFuture) -> NearbySession {
        var random = ChaChaRandomGenerator(seed: seed)
        let identity = Identity(using: &random)
        let invitation = Invitation(
            session: SessionID(bytes: [UInt8](repeating: UInt8(truncatingIfNeeded: seed), count: 16))!,
            secret: SecureBytes(count: 32, using: &random), expiresAt: expiresAt,
            inviterSigningKey: identity.publicIdentity.signingKey, inviterName: name,
            members: [
                Invitation.Member(
                    staticKey: identity.agreementKey.publicKey, address: NetworkAddress(ipv4: 10, 0, 0, 1, port: 7000))
            ])
        return NearbySession(name: name, invitation: invitation, announcer: NetworkAddress(ipv4: 10, 0, 0, 1, port: 1))
    }

    @Test("A session appears once, stays while heard, and goes three seconds after its last announcement")
    func appearsAndGoes() {
        var list = NearbyList()
        let start = ContinuousClock.now
        let ana = Self.session("ana", seed: 1)
        let appeared = list.heard(ana, at: start)
        #expect(appeared)
        let repeated = list.heard(ana, at: start + .seconds(1))
        #expect(!repeated, "a repeat is no change")
        let early = list.expire(now: start + .seconds(3.9))
        #expect(!early)
        #expect(list.sessions.map(\.name) == ["ana"])
        let late = list.expire(now: start + .seconds(4))
        #expect(late)
        #expect(list.sessions.isEmpty)
    }

    @Test("An expired ticket is dropped even while it is still announced")
    func expiredTicket() {
        var list = NearbyList()
        let now = ContinuousClock.now
        let soon = Date(timeIntervalSince1970: 2_000_000_000)
        _ = list.heard(Self.session("ana", seed: 2, expiresAt: soon), at: now)
        let dropped = list.expire(now: now, date: soon)
        #expect(dropped)
        #expect(list.sessions.isEmpty)
    }

    @Test("At most 64 sessions: a new one replaces the one heard least recently")
    func bounded() {
        var list = NearbyList()
        let start = ContinuousClock.now
        for index in 0..<NearbyList.maxSessions {
            _ = list.heard(Self.session("s\(index)", seed: UInt64(10 + index)), at: start + .milliseconds(index))
        }
        // s0 was heard first and not since: it is the one replaced.
        _ = list.heard(Self.session("s1", seed: 11), at: start + .seconds(1))
        let added = list.heard(Self.session("new", seed: 500), at: start + .seconds(1))
        #expect(added)
        let names = Set(list.sessions.map(\.name))
        #expect(names.count == NearbyList.maxSessions)
        #expect(names.contains("new") && names.contains("s1") && !names.contains("s0"))
    }
}
