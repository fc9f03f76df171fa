import HuddleCrypto
import HuddleProtocol
import HuddleTestKit
import HuddleWire
import Testing

@Suite("Admissions: handshakes from unknown keys under an invitation's secrets")
struct EndpointAdmissionTests {
    static let invitation = AdmissionID(7)

    /// A host with an open admission, and a joiner that knows the host's key and the admission's secrets.
    static func hostAndJoiner(joinerSeed: UInt64 = 20) throws -> (host: Endpoint, joiner: Endpoint) {
        var host = EndpointPair.endpoint(seed: 10)
        try host.addAdmission(invitation, credentials: admissionCredentials)
        return (host, try joiner(seed: joinerSeed, of: host))
    }

    static let admissionCredentials = AdmissionCredentials(
        presharedKey: EndpointPair.secret(70), macSecret: EndpointPair.secret(71))

    /// A host with the invitation's admission open that demands cookies above `threshold` initiations a second.
    static func host(cookiesAbove threshold: Int) throws -> Endpoint {
        var random = ChaChaRandomGenerator(seed: 10)
        var configuration = EndpointConfiguration(
            identity: Identity(using: &random), prologue: EndpointPair.prologue,
            wallClockAtOrigin: TAI64N(seconds: 1_700_000_010, nanoseconds: 0))
        configuration.initiationsPerSecondBeforeCookies = threshold
        var host = Endpoint(configuration: configuration, generator: ChaChaRandomGenerator(seed: 1010))
        try host.addAdmission(invitation, credentials: admissionCredentials)
        return host
    }

    /// A joiner (seed `seed`) that knows `host`'s key and the invitation's secrets.
    static func joiner(seed: UInt64, of host: Endpoint) throws -> Endpoint {
        var joiner = EndpointPair.endpoint(seed: seed)
        try joiner.addPeer(
            PeerCredentials(
                staticKey: host.staticKey, presharedKey: EndpointPair.secret(70), macSecret: EndpointPair.secret(71)))
        return joiner
    }

    @Test("A joiner the host never saw completes the handshake, exchanges messages, and is pending until added")
    func joinerIsAdmitted() throws {
        var (host, joiner) = try Self.hostAndJoiner()
        let id = try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        _ = try joiner.send(Array("hello".utf8), on: ChannelID(16), to: id)
        EndpointPair.exchange(&joiner, &host, now: .zero)

        #expect(host.statistics.admissionsAccepted == 1)
        #expect(host.admission(of: joiner.staticKey) == Self.invitation)
        let events = EndpointPair.events(&host)
        #expect(
            events.contains {
                if case .connected(_, let peer) = $0 { return peer == joiner.staticKey } else { return false }
            })
        #expect(
            events.contains {
                if case .message(_, _, let bytes) = $0 { return bytes == Array("hello".utf8) } else { return false }
            })

        // The application confirms the member with session credentials: no longer pending.
        try host.addPeer(
            PeerCredentials(
                staticKey: joiner.staticKey, presharedKey: EndpointPair.secret(80), macSecret: EndpointPair.secret(81)))
        #expect(host.admission(of: joiner.staticKey) == nil)
    }

    @Test("A joiner that switches to the session's credentials mid-handshake keeps its one connection")
    func credentialSwitchMidHandshake() throws {
        var (host, joiner) = try Self.hostAndJoiner()
        // The host is a member: it also holds the session admission (the members' credentials).
        let members = (psk: EndpointPair.secret(80), mac: EndpointPair.secret(81))
        try host.addAdmission(
            AdmissionID(8), credentials: AdmissionCredentials(presharedKey: members.psk, macSecret: members.mac))
        let id = try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        let first = EndpointPair.drain(&joiner, now: .zero)
        // Welcomed by another member, the joiner switches to the session's credentials and initiates again.
        try joiner.addPeer(
            PeerCredentials(staticKey: host.staticKey, presharedKey: members.psk, macSecret: members.mac))
        joiner.handleTimeout(now: .zero + .milliseconds(1))
        let second = EndpointPair.drain(&joiner, now: .zero + .milliseconds(1))
        #expect(second.count == 1)
        // The host answers both (more than 20 ms apart); only the first answer reaches the joiner.
        for datagram in first {
            host.handle(datagram: datagram, from: EndpointPair.address(1), now: .zero + .milliseconds(30))
        }
        let answer = EndpointPair.drain(&host, now: .zero + .milliseconds(30))
        for datagram in second {
            host.handle(datagram: datagram, from: EndpointPair.address(1), now: .zero + .milliseconds(60))
        }
        _ = EndpointPair.drain(&host, now: .zero + .milliseconds(60))
        for datagram in answer {
            joiner.handle(datagram: datagram, from: EndpointPair.address(2), now: .zero + .milliseconds(61))
        }
        #expect(joiner.connection(id)?.state == .established)
        _ = try joiner.send(Array("hello".utf8), on: ChannelID(16), to: id)
        EndpointPair.exchange(&joiner, &host, now: .zero + .milliseconds(62))
        let events = EndpointPair.events(&host)
        #expect(
            events.contains {
                if case .message(_, _, let bytes) = $0 { return bytes == Array("hello".utf8) } else { return false }
            }, "the host takes the keys the joiner completed with, on the same connection")
        #expect(!events.contains { if case .closed = $0 { return true } else { return false } })
        #expect(host.statistics.unknownIndexDropped == 0)
        #expect(host.connectionIDs.count == 1)
    }

    @Test("Under load a joiner gets a cookie reply under its admission's key and completes the handshake with mac2")
    func joinerUnderLoadGetsCookie() throws {
        // A host that demands cookies from every initiation (load threshold 0), with the invitation's admission.
        var host = try Self.host(cookiesAbove: 0)
        var joiner = try Self.joiner(seed: 20, of: host)
        let id = try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        EndpointPair.exchange(&joiner, &host, now: .zero)
        #expect(host.statistics.cookieRepliesSent == 1, "the unknown joiner's mac1 verifies under the admission")
        #expect(joiner.statistics.cookieRepliesAccepted == 1)
        #expect(joiner.connection(id)?.state == .established, "the resent initiation carries mac2 and is answered")
        #expect(host.statistics.admissionsAccepted == 1)
    }

    /// Runs joiner `joiner` (at `address`) against `host` until neither sends: the first initiation draws a cookie
    /// reply, the second carries mac2. Returns whether the host answered with a handshake response.
    static func handshake(
        _ joiner: inout Endpoint, at address: NetworkAddress, with host: inout Endpoint, now: Instant
    ) throws -> Bool {
        try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: now)
        var answered = false
        while true {
            let fromJoiner = EndpointPair.drain(&joiner, now: now)
            let fromHost = EndpointPair.drain(&host, now: now)
            if fromJoiner.isEmpty && fromHost.isEmpty { return answered }
            for datagram in fromJoiner { host.handle(datagram: datagram, from: address, now: now) }
            for datagram in fromHost {
                if (try? PacketClassifier.classify(datagram)) == .handshakeResponse { answered = true }
                joiner.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
            }
        }
    }

    @Test("D2: under load one address that answers cookies gets 5 handshakes at once and 5 a second; another is served")
    func perSourceRateUnderLoad() throws {
        var host = try Self.host(cookiesAbove: 0)
        func joiner(_ seed: UInt64) throws -> Endpoint { try Self.joiner(seed: seed, of: host) }
        let burst = ProtocolLimits.initiationBurstPerSource
        // Twelve joiners from one address, each from its own port, at the same instant: the burst gets through.
        var answered = 0
        for index in 0..<12 {
            var one = try joiner(500 + UInt64(index))
            let address = NetworkAddress(ipv4: 10, 0, 0, 9, port: 5000 + UInt16(index))
            if try Self.handshake(&one, at: address, with: &host, now: .zero) { answered += 1 }
        }
        #expect(answered == burst)
        #expect(host.statistics.initiationsRateLimited == 12 - burst)
        #expect(host.statistics.cookieRepliesSent == 12)
        // Another address is not affected.
        var other = try joiner(600)
        #expect(try Self.handshake(&other, at: NetworkAddress(ipv4: 10, 0, 0, 10, port: 5000), with: &host, now: .zero))
        // A second later the first address has earned 20 more, capped at the burst.
        var later = 0
        for index in 0..<8 {
            var one = try joiner(700 + UInt64(index))
            let address = NetworkAddress(ipv4: 10, 0, 0, 9, port: 6000 + UInt16(index))
            if try Self.handshake(&one, at: address, with: &host, now: .zero + .seconds(1)) { later += 1 }
        }
        #expect(later == burst)
    }

    @Test("Pending peers that proved their address but never confirm keep their slots for 5 s, then yield to a joiner")
    func provedButUnconfirmedYield() throws {
        var host = try Self.host(cookiesAbove: 10)
        /// A joiner from its own address that answers cookie replies but drops the host's response, so it never
        /// confirms; returns whether the host answered it.
        func flooder(_ index: Int, now: Instant) throws -> Bool {
            var joiner = try Self.joiner(seed: 2_000 + UInt64(index), of: host)
            let address = NetworkAddress(ipv4: 10, 1, UInt8(index >> 8), UInt8(index & 0xFF), port: 4000)
            try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: now)
            var answered = false
            while true {
                let fromJoiner = EndpointPair.drain(&joiner, now: now)
                let fromHost = EndpointPair.drain(&host, now: now)
                if fromJoiner.isEmpty && fromHost.isEmpty { return answered }
                for datagram in fromJoiner { host.handle(datagram: datagram, from: address, now: now) }
                for datagram in fromHost {
                    switch try? PacketClassifier.classify(datagram) {
                    case .handshakeResponse: answered = true
                    case .cookieReply: joiner.handle(datagram: datagram, from: EndpointPair.address(2), now: now)
                    default: break
                    }
                }
            }
        }
        // Under load (more than 10 initiations in the second) the flood proves its addresses: all 64 slots end up
        // held by proved, unconfirmed peers.
        for index in 0..<80 { _ = try flooder(index, now: .zero) }
        #expect(host.statistics.cookieRepliesSent > 0)
        // The flood is over. A joiner that does not need a cookie any more, 2 s later: refused, the slots are young.
        #expect(!(try flooder(500, now: .zero + .seconds(2))))
        let refused = host.statistics.admissionsRefused
        #expect(refused >= 1)
        // 6 s after the flood the oldest proved peer has had its chance: it yields.
        let evicted = host.statistics.admissionsEvicted
        #expect(try flooder(501, now: .zero + .seconds(6)), "admitted")
        #expect(host.statistics.admissionsEvicted == evicted + 1)
        #expect(host.statistics.admissionsRefused == refused)
    }

    @Test("A joiner with the wrong mac secret costs one keyed hash and gets no reply")
    func wrongMacSecret() throws {
        var (host, _) = try Self.hostAndJoiner()
        var joiner = EndpointPair.endpoint(seed: 21)
        try joiner.addPeer(
            PeerCredentials(
                staticKey: host.staticKey, presharedKey: EndpointPair.secret(70), macSecret: EndpointPair.secret(99)))
        try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        let counts = EndpointPair.exchange(&joiner, &host, now: .zero)
        #expect(counts.fromB == 0)
        #expect(host.statistics.mac1Failures == 1)
        #expect(host.statistics.initiationsProcessed == 0)
    }

    @Test("After removeAdmission new joiners are refused; admitted connections continue")
    func removedAdmission() throws {
        var (host, joiner) = try Self.hostAndJoiner()
        try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        EndpointPair.exchange(&joiner, &host, now: .zero)
        host.removeAdmission(Self.invitation)

        var late = try Self.hostAndJoiner(joinerSeed: 22).joiner
        try late.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        for datagram in EndpointPair.drain(&late, now: .zero) {
            host.handle(datagram: datagram, from: EndpointPair.address(3), now: .zero)
        }
        // The pending joiner's mac1 key is the admission's (both derive from its secret and the host's key), so the
        // late joiner passes mac1 and is refused after Diffie-Hellman, as an unknown key.
        #expect(host.statistics.unknownPeerDropped == 1)
        #expect(host.statistics.admissionsAccepted == 1)
        #expect(EndpointPair.drain(&host, now: .zero).isEmpty)
        #expect(host.connectionID(for: joiner.staticKey) != nil)
    }

    @Test("At 64 pending joiners that completed their handshakes the 65th initiation is refused and counted, no reply")
    func pendingJoinerLimit() throws {
        var (host, _) = try Self.hostAndJoiner()
        var joiners: [Endpoint] = []
        for index in 0...ProtocolLimits.maxAdmittedPeers {
            var joiner = try Self.hostAndJoiner(joinerSeed: 100 + UInt64(index)).joiner
            try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
            for datagram in EndpointPair.drain(&joiner, now: .zero) {
                host.handle(datagram: datagram, from: EndpointPair.address(3), now: .zero)
            }
            // Only handshake responses count: the host's established connections also send Path MTU probes.
            let replies = EndpointPair.drain(&host, now: .zero).filter {
                (try? PacketClassifier.classify($0)) == .handshakeResponse
            }
            #expect(
                replies.count == (index < ProtocolLimits.maxAdmittedPeers ? 1 : 0),
                "joiner \(index): \(host.statistics)")
            // The joiner completes its handshake: its first packet confirms the host's keys.
            for datagram in replies { joiner.handle(datagram: datagram, from: EndpointPair.address(2), now: .zero) }
            for datagram in EndpointPair.drain(&joiner, now: .zero) {
                host.handle(datagram: datagram, from: EndpointPair.address(3), now: .zero)
            }
            joiners.append(joiner)
        }
        #expect(host.statistics.admissionsAccepted == ProtocolLimits.maxAdmittedPeers)
        #expect(host.statistics.admissionsRefused == 1)
        #expect(host.statistics.admissionsEvicted == 0)
    }

    @Test("At 64 pending joiners that never completed their handshakes the oldest makes room for a new one (S-flood)")
    func unconfirmedJoinerEvicted() throws {
        var (host, _) = try Self.hostAndJoiner()
        var first: X25519PublicKey?
        for index in 0...ProtocolLimits.maxAdmittedPeers {
            var joiner = try Self.hostAndJoiner(joinerSeed: 300 + UInt64(index)).joiner
            if index == 0 { first = joiner.staticKey }
            try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
            let now = Instant.zero + .milliseconds(Int64(index))
            for datagram in EndpointPair.drain(&joiner, now: .zero) {
                host.handle(datagram: datagram, from: EndpointPair.address(3), now: now)
            }
            // Answered every time, and never completed (the replies are dropped).
            #expect(EndpointPair.drain(&host, now: now).count == 1, "joiner \(index): \(host.statistics)")
        }
        #expect(host.statistics.admissionsAccepted == ProtocolLimits.maxAdmittedPeers + 1)
        #expect(host.statistics.admissionsEvicted == 1)
        #expect(host.statistics.admissionsRefused == 0)
        #expect(host.admission(of: try #require(first)) == nil, "the one waiting longest was dropped")
    }

    @Test("A joiner that never confirms the keys is forgotten when its connection times out")
    func unconfirmedJoinerIsForgotten() throws {
        var (host, joiner) = try Self.hostAndJoiner()
        try joiner.connect(to: host.staticKey, at: EndpointPair.address(2), now: .zero)
        for datagram in EndpointPair.drain(&joiner, now: .zero) {
            host.handle(datagram: datagram, from: EndpointPair.address(1), now: .zero)
        }
        _ = EndpointPair.drain(&host, now: .zero)  // the response is lost
        #expect(host.admission(of: joiner.staticKey) == Self.invitation)

        var now = Instant.zero
        while let deadline = host.nextDeadline, deadline < .zero + .seconds(600) {
            now = deadline
            host.handleTimeout(now: now)
            _ = EndpointPair.drain(&host, now: now)
            _ = EndpointPair.events(&host)
        }
        #expect(host.connectionIDs.isEmpty)
        #expect(host.admission(of: joiner.staticKey) == nil)
        #expect(throws: ProtocolError.unknownPeer) {
            try host.connect(to: joiner.staticKey, at: EndpointPair.address(1), now: now)
        }
    }

    @Test("At most 64 admissions are open; the 65th is a typed error, replacing one is fine")
    func admissionLimit() throws {
        var host = EndpointPair.endpoint(seed: 10)
        let credentials = AdmissionCredentials(presharedKey: EndpointPair.secret(1), macSecret: EndpointPair.secret(2))
        for index in 0..<ProtocolLimits.maxAdmissions {
            try host.addAdmission(AdmissionID(UInt64(index)), credentials: credentials)
        }
        #expect(throws: ProtocolError.admissionLimitReached(limit: ProtocolLimits.maxAdmissions)) {
            try host.addAdmission(AdmissionID(1000), credentials: credentials)
        }
        try host.addAdmission(AdmissionID(0), credentials: credentials)
    }
}
