import HuddleProtocol

/// Every named scenario, as `huddle-sim --list` prints them and the simulation test suite runs them.
public enum Scenarios {
    /// All scenarios, in a stable order.
    public static let all: [Scenario] = transfers + sessionScenarios + livenessScenarios + adversaryScenarios

    /// The scenario called `name`, among ``all`` and ``onDemand``.
    public static func named(_ name: String) -> Scenario? {
        (all + onDemand + measurements).first { $0.name == name }
    }

    /// Scenarios run only when named (not by `--scenario all` or the committed seeds): membership churn with an
    /// always-on delivery checker (issue 11). The simulation suite runs it over the seeds in `churn-seeds.txt`.
    public static let onDemand: [Scenario] = [
        Scenario(
            name: "churn",
            summary:
                "6-8 members join, leave, crash, restart and rejoin (pairs at once) under partitions (halves, one "
                + "isolated, one direction) while all send messages and datagrams and change the activity; every "
                + "reliable message delivered once in order or reported; roster, activity and a journal attachment "
                + "converge [G1, H9, N11, N12]"
        ) { seed in try ChurnScenario().run(seed: seed) },
        Scenario(
            name: "churn-schedule",
            summary:
                "the churn scenario under a schedule drawn from the seed: timers late or on a coarse tick, reads "
                + "delayed and batched, the session's schedules set up at once [G1, H9, N11, N12]"
        ) { seed in
            var scenario = ChurnScenario()
            scenario.exploresSchedules = true
            return try scenario.run(seed: seed)
        },
        largeSession(64),
        largeSession(128),
        largeSession(256),
        Scenario(
            name: "churn-long",
            summary: "the churn scenario with 10 simulated minutes of churn instead of 60 s [G1, H9, N11, N12]"
        ) { seed in
            var scenario = ChurnScenario()
            scenario.churnPhase = .seconds(600)
            return try scenario.run(seed: seed)
        },
    ]

    /// Measurement profiles (issue 13), run only when named: goodput over wide-area paths, to compare congestion
    /// and flow control against the link's capacity. `wan-P`: 100 Mbit/s, 40 ms round trip, a one-BDP drop-tail
    /// queue and P % random loss each way, 64 MiB of bulk data; `lfn`: 1 Gbit/s, 100 ms round trip, 1 GiB. Every
    /// checker stays on; `huddle-sim --scenario wan-5 --seeds 1-3` prints the goodput.
    public static let measurements: [Scenario] = wanProfiles + longPaths + sharedBottlenecks + rotations + roundTrips

    /// `rotation-N`: what a removal costs a session of N members (``RotationScenario``), `make rotation-measure`.
    static let rotations: [Scenario] =
        [8, 32, 64, 128, 256].map { members in
            Scenario(
                name: "rotation-\(members)",
                summary:
                    "\(members) members, 20 ms round trip, 2 % loss: the creator removes one; time until every member knows "
                    + "and holds the new admission key, bytes per member [issue 36]"
            ) { seed in try RotationScenario(members: members).run(seed: seed) }
        }
        + [8, 32, 128, 256].map { members in
            Scenario(
                name: "rotation-leave-\(members)",
                summary:
                    "\(members) members, 20 ms round trip, 2 % loss: one leaves; time until every member knows and holds "
                    + "the new admission key, bytes per member, the final epoch (1: one key drawn) [issue 36]"
            ) { seed in try RotationScenario(members: members, leaves: true).run(seed: seed) }
        }

    static let wanProfiles: [Scenario] = [0, 1, 2, 5, 10].map { percent in
        transfer(
            "wan-\(percent)", "100 Mbit/s x 40 ms, \(percent) % random loss each way, 64 MiB [issue 13]",
            // An hour of simulated time: CUBIC needs about 16 minutes for wan-10.
            TransferScenario(bulkBytes: 64 * 1024 * 1024, timeout: .seconds(3600)) { _ in
                LinkConditions(
                    latency: .milliseconds(20), lossRate: Double(percent) / 100, bandwidth: 12_500_000,
                    queueLimit: 500_000)
            })
    }

    static let longPaths: [Scenario] =
        [0, 5].map { percent in
            transfer(
                "lan-\(percent)",
                "400 MB/s x 0.2 ms (a LAN or veth pair), \(percent) % random loss each way, 256 MiB [issue 13]",
                TransferScenario(bulkBytes: 256 * 1024 * 1024) { _ in
                    LinkConditions(
                        latency: .microseconds(100), lossRate: Double(percent) / 100, bandwidth: 400_000_000,
                        queueLimit: 1_000_000)
                })
        } + [
            transfer(
                "lfn", "1 Gbit/s x 100 ms, no loss, 1 GiB: needs a 12.5 MB window [issue 13]",
                TransferScenario(bulkBytes: 1024 * 1024 * 1024) { _ in
                    LinkConditions(latency: .milliseconds(50), bandwidth: 125_000_000, queueLimit: 12_500_000)
                }),
            transfer(
                "relay-mix",
                "20 % loss, reordering (10-40 ms one way), 10 % duplicates, no bandwidth limit, 20 MiB: the user-space "
                    + "relay measurement [issue 13]",
                TransferScenario(bulkBytes: 20 * 1024 * 1024) { _ in
                    LinkConditions(
                        latency: .milliseconds(10), jitter: .milliseconds(30), lossRate: 0.2, duplicateRate: 0.1)
                }),
        ]

    static let sharedBottlenecks: [Scenario] = [
        Scenario(
            name: "shared-2",
            summary: "2 flows through one 20 Mbit/s x 40 ms bottleneck (1-BDP queue), started 0.5 s apart; fairness, "
                + "shares and queueing delay over 20 s after a 10 s warm-up [issue 13]"
        ) { seed in try SharedBottleneckScenario(flows: 2).run(seed: seed) },
        Scenario(
            name: "shared-4",
            summary: "the same with 4 flows [issue 13]"
        ) { seed in try SharedBottleneckScenario(flows: 4).run(seed: seed) },
        Scenario(
            name: "vs-cubic",
            summary: "the default controller (flow 0) against CUBIC (flow 1) through the same bottleneck: each one's "
                + "share of the link [issue 13]"
        ) { seed in try SharedBottleneckScenario(flows: 2, controllers: [1: .cubic]).run(seed: seed) },
    ]

    static func transfer(_ name: String, _ summary: String, _ scenario: TransferScenario) -> Scenario {
        Scenario(name: name, summary: summary) { seed in try scenario.run(seed: seed) }
    }

    /// Transfers under one link fault each.
    static let transfers: [Scenario] = [
        transfer(
            "clean", "15 ms, 10 Mbit/s, 25-packet queue; mixed messages + 10 MiB [N1]",
            TransferScenario { _ in
                LinkConditions(latency: .milliseconds(15), bandwidth: 1_250_000, queueLimit: 25 * 1200)
            }),
        transfer(
            "loss-2", "2 % loss in bursts of up to 3, both ways [N2]",
            TransferScenario { _ in
                LinkConditions(
                    latency: .milliseconds(15), burstLoss: .init(enterBad: 0.01, leaveBad: 0.5, lossInBad: 1))
            }),
        transfer(
            "loss-30", "30 % loss in bursts of up to 3, both ways [N3]",
            TransferScenario(bulkBytes: 10 * 1024 * 1024, timeout: .seconds(3600)) { _ in
                LinkConditions(latency: .milliseconds(15), burstLoss: .correlated(rate: 0.3, correlation: 0.5))
            }),
        transfer(
            "corrupt-2", "2 % of datagrams bit-flipped, truncated or extended [N4]",
            TransferScenario { _ in LinkConditions(latency: .milliseconds(15), corruptRate: 0.02) }),
        transfer(
            "corrupt-30", "30 % of datagrams bit-flipped, truncated or extended [N4]",
            TransferScenario(timeout: .seconds(3600)) { _ in
                LinkConditions(latency: .milliseconds(15), corruptRate: 0.3)
            }),
        transfer(
            "duplicate-50", "50 % of datagrams delivered twice [N5, R1]",
            TransferScenario { _ in LinkConditions(latency: .milliseconds(15), duplicateRate: 0.5) }),
        transfer(
            "reorder", "deep reordering: 5 ms +- up to 60 ms jitter [N6]",
            TransferScenario { random in
                LinkConditions(
                    latency: .milliseconds(5), jitter: .milliseconds(Int64(random.integer(in: 20...60))))
            }),
        transfer(
            "blackhole", "link blackholed 2 s every 7 s, three times, during the transfer [N7]",
            TransferScenario(
                conditions: { _ in LinkConditions(latency: .milliseconds(15), bandwidth: 1_250_000, queueLimit: 30_000)
                },
                schedule: { net in
                    for round in 0..<3 {
                        let start = Instant.zero + .seconds(Int64(1 + 7 * round))
                        net.schedule(at: start) { net in
                            net.setLink(from: 0, to: 1, up: false)
                            net.setLink(from: 1, to: 0, up: false)
                        }
                        net.schedule(at: start + .seconds(2)) { net in net.heal() }
                    }
                })),
        transfer(
            "long-delay", "750 ms one-way delay [N9]",
            TransferScenario { _ in LinkConditions(latency: .milliseconds(750)) }),
        transfer(
            "flaky", "20 % loss with 75 % correlation (Jepsen flaky) for the first 60 s, then clean [N13]",
            TransferScenario(
                timeout: .seconds(3600),
                conditions: { _ in
                    LinkConditions(latency: .milliseconds(15), burstLoss: .correlated(rate: 0.2, correlation: 0.75))
                },
                schedule: { net in
                    net.schedule(at: .zero + .seconds(60)) { net in
                        net.setAllConditions(LinkConditions(latency: .milliseconds(15)))
                    }
                })),
        transfer(
            "mtu-1200", "path MTU 1200: every larger probe lost, no data datagram ever too large [N15]",
            TransferScenario(
                conditions: { _ in LinkConditions(latency: .milliseconds(10), mtu: 1200) },
                finalCheck: { net in Self.checkPathMTU(net, expected: 1200, onlyProbesDropped: true) })),
        transfer(
            "mtu-1472", "Ethernet path MTU: discovery settles on 1472 and no data datagram is too large [N15]",
            TransferScenario(
                conditions: { _ in LinkConditions(latency: .milliseconds(10), bandwidth: 2_500_000) },
                finalCheck: { net in Self.checkPathMTU(net, expected: 1472, onlyProbesDropped: true) })),
        transfer(
            "mtu-shrink",
            "path MTU 1472 shrinking to 1400 mid-transfer: the black hole is found, discovery settles on 1392 [N15]",
            TransferScenario(
                conditions: { _ in LinkConditions(latency: .milliseconds(10), bandwidth: 2_500_000) },
                schedule: { net in
                    net.schedule(at: .zero + .seconds(2)) { net in
                        net.setAllConditions(
                            LinkConditions(latency: .milliseconds(10), mtu: 1400, bandwidth: 2_500_000))
                    }
                },
                finalCheck: { net in Self.checkPathMTU(net, expected: 1392, onlyProbesDropped: false, blackHoles: 1) })),
    ]

    /// The path-MTU scenarios' check: the sender's connection settled on `expected`, and (unless the MTU changed
    /// under it) nothing but its probes was ever dropped for size; `blackHoles` is how many times it must have found
    /// that the path stopped carrying its size.
    static func checkPathMTU(
        _ net: SimulatedNetwork<EndpointNode>, expected: Int, onlyProbesDropped: Bool, blackHoles: Int = 0
    ) -> String? {
        guard let (statistics, size) = TransferScenario.connectionStatistics(net, node: 0) else {
            return "the sender's connection is gone"
        }
        let probes = (0..<2).compactMap { TransferScenario.connectionStatistics(net, node: $0) }
            .reduce(0) { $0 + $1.statistics.pathMTUProbesSent }
        if size != expected { return "path datagram size \(size), expected \(expected); \(statistics)" }
        if statistics.pathMTUBlackHoles != blackHoles {
            return "\(statistics.pathMTUBlackHoles) black holes found, expected \(blackHoles); \(statistics)"
        }
        if onlyProbesDropped, net.statistics.droppedOverMTU > probes {
            return "\(net.statistics.droppedOverMTU) datagrams dropped for size but only \(probes) probes sent"
        }
        return nil
    }

    /// `large-N`: ``LargeSessionScenario`` with `members` members.
    static func largeSession(_ members: Int) -> Scenario {
        Scenario(
            name: "large-\(members)",
            summary:
                "\(members) members on one address join in bursts through the founder's ticket, then crash, restart, "
                + "leave and split while sending; exactly-once, one roster, a full mesh; join-to-mesh time and idle "
                + "bytes per member [issue 34]"
        ) { seed in try LargeSessionScenario(members: members).run(seed: seed) }
    }
}
