import Testing

@testable import HuddleProtocol

@Suite("Initiations per source under load")
struct InitiationRateLimiterTests {
    static func source(_ index: Int, port: UInt16 = 4000) -> Route {
        .direct(
            NetworkAddress(
                ipv4: 10, UInt8(index >> 16 & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF), port: port))
    }

    @Test("A source gets its burst, then one token per 50 ms; the port does not matter, an IPv6 /64 is one source")
    func rate() throws {
        var limiter = InitiationRateLimiter()
        let burst = ProtocolLimits.initiationBurstPerSource
        for port in 0..<burst {
            let allowed1 = limiter.allow(Self.source(1, port: UInt16(port)), now: .zero)
            #expect(allowed1)
        }
        let allowed2 = limiter.allow(Self.source(1, port: 99), now: .zero)
        #expect(!allowed2)
        let allowed3 = limiter.allow(Self.source(1), now: .zero + .milliseconds(50))
        #expect(allowed3)
        let allowed4 = limiter.allow(Self.source(1), now: .zero + .milliseconds(60))
        #expect(!allowed4)
        let prefix: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1]
        for host in 0..<UInt8(burst) {
            let address = try #require(NetworkAddress(ipv6: prefix + [0, 0, 0, 0, 0, 0, 0, host], port: 4000))
            let allowed5 = limiter.allow(.direct(address), now: .zero)
            #expect(allowed5)
        }
        let another = try #require(NetworkAddress(ipv6: prefix + [0, 0, 0, 0, 0, 0, 0, 200], port: 4000))
        let allowed6 = limiter.allow(.direct(another), now: .zero)
        #expect(!allowed6, "the same /64")
        // IPv4 addresses mapped into IPv6 (a dual-stack socket) are separate sources, one per IPv4 address.
        for last in 1...2 {
            let mapped = try #require(
                NetworkAddress(ipv6: [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, UInt8(last)], port: 9))
            for _ in 0..<burst {
                let allowedMapped = limiter.allow(.direct(mapped), now: .zero)
                #expect(allowedMapped, "192.0.2.\(last)")
            }
        }
    }

    @Test("At 4,096 tracked sources a new one is refused until buckets refill and a sweep (every 250 ms) forgets them")
    func tableLimit() {
        var limiter = InitiationRateLimiter()
        for index in 0..<ProtocolLimits.maxRateLimitedSources {
            let allowed7 = limiter.allow(Self.source(index), now: .zero)
            #expect(allowed7)
        }
        #expect(limiter.trackedSources == ProtocolLimits.maxRateLimitedSources)
        let newcomer = Self.source(ProtocolLimits.maxRateLimitedSources)
        let allowed8 = limiter.allow(newcomer, now: .zero)
        #expect(!allowed8)
        // 50 ms later every bucket is full again, but the table was swept 50 ms ago: still refused (a stream of new
        // sources cannot make every initiation scan the table). At 250 ms the sweep forgets them all.
        let allowed9 = limiter.allow(newcomer, now: .zero + .milliseconds(50))
        #expect(!allowed9)
        let allowed10 = limiter.allow(newcomer, now: .zero + InitiationRateLimiter.sweepInterval)
        #expect(allowed10)
        #expect(limiter.trackedSources == 1)
    }
}
