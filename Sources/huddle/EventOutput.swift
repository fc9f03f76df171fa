import Foundation
import Huddle
import HuddleProtocol
import NIOCore

/// Prints what happens in the session: one JSON object per line (`--json`), or lines for people.
struct EventOutput: Sendable {
    let json: Bool

    /// A JSON value.
    enum Value: Encodable, Sendable {
        case string(String)
        case number(Double)
        case integer(Int)
        case bool(Bool)
        case list([Value])
        case object([String: Value])
        case null

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            case .integer(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            case .list(let values): try container.encode(values)
            case .object(let fields): try container.encode(fields)
            case .null: try container.encodeNil()
            }
        }
    }

    /// Prints event `name` with `fields` as JSON, or `text` for people.
    func emit(_ name: String, _ fields: KeyValuePairs<String, Value>, text: @autoclosure () -> String) {
        if json {
            var object = ["event": Value.string(name)]
            for (key, value) in fields { object[key] = value }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(object), let line = String(data: data, encoding: .utf8) {
                print(line)
            }
        } else {
            print(text())
        }
    }

    /// Reports a node or relay that could not start: code `address-in-use` when its UDP port is taken (the message
    /// names the port and, when it can, the process holding it), `start-failed` otherwise.
    func startFailed(_ failure: any Error) {
        error(code: Self.isAddressInUse(failure) ? "address-in-use" : "start-failed", "\(failure)")
    }

    /// Whether `error` says a UDP port is already in use.
    static func isAddressInUse(_ error: any Error) -> Bool {
        switch error {
        case TransportError.addressInUse, HuddleError.transport(.addressInUse): true
        default: false
        }
    }

    /// Reports an error: a JSON event on stdout with `--json`, and always one line on stderr.
    func error(code: String, _ message: String) {
        if json { emit("error", ["code": .string(code), "message": .string(message)], text: "") }
        StandardError.write("error: \(message)")
    }

    /// The node gained or lost its usable network path (``GroupStateObserver``):
    /// `{"event":"eligibility","eligible":false}`.
    func eligibility(_ eligible: Bool) {
        emit(
            "eligibility", ["eligible": .bool(eligible)],
            text: eligible ? "network path back: eligible for group sessions" : "no usable network path")
    }

    /// A session announced on the local network (`huddle discover`).
    func nearby(_ nearby: NearbySession) {
        let invitation = nearby.invitation
        emit(
            "nearby",
            [
                "name": .string(nearby.name), "session": .string("\(invitation.session)"),
                "inviter": .string(invitation.inviterName),
                "inviter_fingerprint": .string(invitation.inviterFingerprint),
                "address": .string("\(nearby.announcer)"),
                "expires": .string(ISO8601DateFormatter().string(from: invitation.expiresAt)),
            ],
            text: "\(nearby.name)  (\(invitation.inviterName) \(invitation.inviterFingerprint) at \(nearby.announcer))")
    }

    /// A session's announcements stopped (`huddle discover --watch`).
    func nearbyGone(_ nearby: NearbySession) {
        emit(
            "nearby-gone",
            ["name": .string(nearby.name), "session": .string("\(nearby.invitation.session)")],
            text: "gone: \(nearby.name)")
    }

    /// The session is being announced on the local network (`huddle host --lan NAME`).
    func announcing(_ announcement: NearbyAnnouncement) {
        emit(
            "announcing",
            [
                "name": .string(announcement.name),
                "expires": .string(ISO8601DateFormatter().string(from: announcement.invitation.expiresAt)),
            ],
            text: "announcing \"\(announcement.name)\" on the local network (huddle join --lan NAME joins it)")
    }

    /// Where `--metrics` serves: `{"event":"metrics","url":"http://127.0.0.1:PORT/metrics"}`.
    func metrics(_ address: SocketAddress) {
        let host = address.ipAddress.map { address.protocol == .inet6 ? "[\($0)]" : $0 } ?? "127.0.0.1"
        let url = "http://\(host):\(address.port ?? 0)/metrics"
        emit("metrics", ["url": .string(url)], text: "metrics at \(url)")
    }

    /// Where a `--turn` allocation stands after the node started: `turn` with the `server`, its `transport` (udp or
    /// tcp), whether it is a TCP fallback on `standby` (UDP works), the `relayed` address it granted (or null) and the
    /// `error` (or null: granted, standing by; else wrong credentials, a refusal, no answer yet; the node retries).
    func turn(_ allocation: TurnAllocation) {
        let server = "\(allocation.server)"
        let transport = "\(allocation.transport)"
        let reason = allocation.failure.map { "\($0)" } ?? "no answer yet"
        let failed = allocation.relayedAddress == nil && !allocation.isStandingBy
        let text =
            if let relayed = allocation.relayedAddress {
                "TURN \(server) (\(transport)): reachable at \(relayed)"
            } else if allocation.isStandingBy {
                "TURN \(server) (\(transport)): standing by while UDP works"
            } else {
                "TURN \(server) (\(transport)): no allocation (\(reason)); retrying"
            }
        emit(
            "turn",
            [
                "server": .string(server), "transport": .string(transport), "standby": .bool(allocation.isStandingBy),
                "relayed": allocation.relayedAddress.map { .string("\($0)") } ?? .null,
                "error": failed ? .string(reason) : .null,
            ],
            text: text)
    }

    /// A `port-mapping` event: where the home router's mapping for this node stands (`gateway`, `protocol` pcp or
    /// nat-pmp, the `external` address peers reach, its `lifetime_s`, or the `error`).
    func portMapping(_ mapping: PortMapping) {
        let gateway = "\(mapping.gateway)"
        let text: String
        if let external = mapping.externalAddress, let method = mapping.mappingProtocol {
            text = "port mapping on \(gateway) (\(method)): reachable at \(external)"
        } else {
            text = "port mapping on \(gateway): none (\(mapping.failure.map { "\($0)" } ?? "not asked yet"))"
        }
        emit(
            "port-mapping",
            [
                "gateway": .string(gateway), "protocol": mapping.mappingProtocol.map { .string("\($0)") } ?? .null,
                "external": mapping.externalAddress.map { .string("\($0)") } ?? .null,
                "lifetime_s": mapping.lifetime.map { .integer(Int($0.components.seconds)) } ?? .null,
                "error": mapping.failure.map { .string("\($0)") } ?? .null,
            ],
            text: text)
    }

    /// What `huddle doctor` found, as one `doctor` event: the probing address, the NAT's `mapping` and `filtering`,
    /// the `reflexive` addresses, each STUN server's answer, each TURN allocation attempt, each relay registration
    /// (`relays`: `relay`, `registered`, `ms`), each home router's port mapping (`port_mapping`: `gateway`,
    /// `protocol`, `external`, `error`), the largest datagram that reached `mtu_server` (`mtu_bytes`, null when none
    /// did), and how long it all took.
    func doctor(
        _ report: NatReport, turn: [DoctorCommand.TurnCheck], relays: [DoctorCommand.RelayCheck],
        portMappings: [PortMapping], elapsed: Duration
    ) {
        func milliseconds(_ duration: Duration?) -> Value {
            duration.map {
                .number(
                    (Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000)
                        .rounded() / 1)
            } ?? .null
        }
        let stun: [Value] = report.servers.map { answer in
            .object([
                "server": .string("\(answer.server)"), "mapped": answer.mapped.map { .string("\($0)") } ?? .null,
                "rtt_ms": milliseconds(answer.rtt), "rfc5780": .bool(answer.supportsBehaviourTests),
            ])
        }
        let turnValues: [Value] = turn.map { check in
            .object([
                "server": .string("\(check.server)"), "transport": .string(check.transport.rawValue),
                "relayed": check.relayed.map { .string("\($0)") } ?? .null, "ms": milliseconds(check.elapsed),
                "error": check.error.map { .string($0) } ?? .null,
            ])
        }
        let relayValues: [Value] = relays.map { check in
            .object([
                "relay": .string("\(check.relay)"), "registered": .bool(check.elapsed != nil),
                "ms": milliseconds(check.elapsed),
            ])
        }
        let mappingValues: [Value] = portMappings.map { mapping in
            .object([
                "gateway": .string("\(mapping.gateway)"),
                "protocol": mapping.mappingProtocol.map { .string("\($0)") } ?? .null,
                "external": mapping.externalAddress.map { .string("\($0)") } ?? .null,
                "error": mapping.externalAddress != nil
                    ? .null
                    : .string(mapping.failure.map { "\($0)" } ?? "no answer within \(DoctorCommand.portMappingBudget)"),
            ])
        }
        var lines = ["probing from \(report.local)"]
        for answer in report.servers {
            lines.append(
                "STUN \(answer.server): "
                    + (answer.mapped.map { "sees this machine at \($0)" } ?? "no answer")
                    + (answer.supportsBehaviourTests ? " (RFC 5780)" : ""))
        }
        lines.append("NAT mapping: \(report.mapping); filtering: \(report.filtering)")
        for check in turn {
            lines.append(
                "TURN \(check.server) over \(check.transport): "
                    + (check.relayed.map { "allocated \($0)" } ?? (check.error ?? "no allocation")))
        }
        for check in relays {
            lines.append(
                "relay \(check.relay): "
                    + (check.elapsed.map { "registered in \($0.formatted(.units(allowed: [.milliseconds])))" }
                        ?? "no confirmation within \(DoctorCommand.turnBudget)"))
        }
        for mapping in portMappings {
            lines.append(
                "router \(mapping.gateway): "
                    + (mapping.externalAddress.map {
                        "maps a port over \(mapping.mappingProtocol!), reachable at \($0)"
                    }
                        ?? "no port mapping (\(mapping.failure.map { "\($0)" } ?? "no answer within \(DoctorCommand.portMappingBudget)"))")
            )
        }
        if portMappings.isEmpty { lines.append("port mapping: no router reached from a private address") }
        if let server = report.mtuServer {
            lines.append(
                "datagrams to \(server): "
                    + (report.mtuBytes.map { "\($0) bytes arrive" } ?? "none of \(NatReport.probedSizes) arrived")
                    + " (largest probed \(NatReport.probedSizes.max()!))")
        }
        lines.append("done in \(elapsed.formatted(.units(allowed: [.milliseconds])))")
        emit(
            "doctor",
            [
                "local": .string("\(report.local)"), "mapping": .string(report.mapping),
                "filtering": .string(report.filtering), "reflexive": .list(report.reflexive.map { .string("\($0)") }),
                "stun": .list(stun), "turn": .list(turnValues), "relays": .list(relayValues),
                "port_mapping": .list(mappingValues),
                "mtu_server": report.mtuServer.map { .string("\($0)") } ?? .null,
                "mtu_bytes": report.mtuBytes.map { .integer($0) } ?? .null,
                "mtu_probed_up_to": .integer(NatReport.probedSizes.max()!), "elapsed_ms": milliseconds(elapsed),
            ],
            text: lines.joined(separator: "\n"))
    }

    /// A node registered at this relay or its registration ended (`huddle relay`): `relay-registered` with the
    /// node's `key` (the first 8 bytes of its X25519 static key in hex) and the `address` the relay sees it at, or
    /// `relay-unregistered` with the `key` and the `reason` (`expired`: not refreshed for 60 s; `displaced`: another
    /// node registered from its address).
    func relayEvent(_ event: RelayServerEvent) {
        switch event {
        case .registered(let key, let address):
            let key = Self.shortHex(key.bytes)
            emit(
                "relay-registered", ["key": .string(key), "address": .string("\(address)")],
                text: "registered: node \(key) at \(address)")
        case .unregistered(let key, let reason):
            let key = Self.shortHex(key.bytes)
            emit(
                "relay-unregistered", ["key": .string(key), "reason": .string(reason.rawValue)],
                text: "unregistered: node \(key) (\(Self.describe(reason)))")
        }
    }

    /// Why a registration at this relay ended, in words.
    static func describe(_ reason: RelayServerEvent.EndReason) -> String {
        switch reason {
        case .expired: "no refresh for \(ProtocolLimits.relayServerRegistrationLifetime.components.seconds) s"
        case .displaced: "another node registered from its address"
        case .notAdmitted: "no longer admitted"
        }
    }

    /// The first 8 bytes of `bytes` in lowercase hex.
    static func shortHex(_ bytes: some Collection<UInt8>) -> String {
        bytes.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// A wait longer than a second begins: what it waits `for` and for how long at most. `waiting` in `--json`;
    /// for people a line on standard error, so standard output keeps only what the session says.
    func waiting(for what: String, seconds: Double) {
        if json {
            emit("waiting", ["for": .string(what), "seconds": .number(seconds)], text: "")
        } else {
            StandardError.write("waiting up to \(Self.seconds(seconds)) for \(what) ...")
        }
    }

    /// `seconds` for people: `30 s`, `2.5 s`.
    static func seconds(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    func ticket(_ invitation: Invitation, askToJoin: Bool = false, uses: Int? = nil) {
        emit(
            "ticket",
            [
                "ticket": .string(invitation.ticket),
                "expires": .string(ISO8601DateFormatter().string(from: invitation.expiresAt)),
                "ask_to_join": .bool(askToJoin),
                "uses": uses.map { .integer($0) } ?? .null,
            ], text: invitation.ticket)
    }

    /// The local node joined; `present` are the other participants already active (later arrivals follow as
    /// `participant-joined`).
    func joined(_ session: GroupSession<ChatActivity>, present: [Participant]) {
        let others = present.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
        let listed = others.map { Value.object(["participant": .string($0.id), "name": .string($0.name)]) }
        var text =
            "joined \"\(session.activity.topic)\" (session \(session.id.description.prefix(8))) as "
            + "\(session.localParticipant)"
        if !others.isEmpty { text += "; here: " + others.map(\.description).joined(separator: ", ") }
        emit(
            "joined",
            [
                "session": .string(session.id.description), "participant": .string(session.localParticipant.id),
                "name": .string(session.localParticipant.name), "topic": .string(session.activity.topic),
                "participants": .list(listed),
            ],
            text: text)
    }

    /// Reliable messages that will not reach a participant: an `undelivered` event (with `--json`) and always a
    /// line on standard error, so no message is lost without a word.
    func undelivered(_ failure: DeliveryFailure) {
        if json {
            emit(
                "undelivered",
                [
                    "participant": .string(failure.participant.id), "name": .string(failure.participant.name),
                    "count": .integer(failure.count), "reason": .string(failure.reason.rawValue),
                ], text: "")
        }
        StandardError.write("undelivered: \(failure)")
    }

    /// Messages another participant sent that this node dropped unread (`messages-dropped` in `--json`).
    func dropped(_ drop: MessageDrop) {
        if json {
            emit(
                "messages-dropped",
                [
                    "participant": .string(drop.participant.id), "name": .string(drop.participant.name),
                    "type": drop.typeName.map { .string($0) } ?? .null, "reliable": .bool(drop.reliable),
                    "count": .integer(drop.count), "reason": .string(drop.reason.rawValue),
                ], text: "")
        }
        StandardError.write("dropped: \(drop)")
    }

    func change(_ change: ParticipantChange) {
        switch change {
        case .joined(let participant):
            emit(
                "participant-joined", ["participant": .string(participant.id), "name": .string(participant.name)],
                text: "+ \(participant) joined")
        case .left(let participant, .removed):
            emit(
                "participant-removed", ["participant": .string(participant.id), "name": .string(participant.name)],
                text: "- \(participant) was removed")
        case .left(let participant, let reason):
            emit(
                "participant-left",
                [
                    "participant": .string(participant.id), "name": .string(participant.name),
                    "reason": .string(reason.rawValue),
                ], text: "- \(participant) \(Self.describe(reason))")
        case .unresponsive(let participant):
            emit(
                "participant-unresponsive",
                ["participant": .string(participant.id), "name": .string(participant.name)],
                text: "? \(participant) is not answering")
        case .responsive(let participant):
            emit(
                "participant-responsive",
                ["participant": .string(participant.id), "name": .string(participant.name)],
                text: "+ \(participant) is answering again")
        }
    }

    /// `path-changed`: a participant's connection moved to another path (hole punching made it direct, a failed
    /// direct path fell back to a relay, or the participant moved); `relay_member` names the member relaying it, if
    /// one does.
    func pathChanged(_ change: PathChange) {
        let rtt = Self.milliseconds(change.smoothedRTT)
        emit(
            "path-changed",
            [
                "participant": .string(change.participant.id), "name": .string(change.participant.name),
                "path": .string(change.path.kind), "path_address": .string(change.path.address.description),
                "relay_member": change.relayingMember.map { .string($0.id) } ?? .null, "rtt_ms": .number(rtt),
            ],
            text: "~ \(change.participant) now \(change.path)\(Self.through(change.relayingMember)) (rtt "
                + "\(String(format: "%.3f", rtt)) ms)")
    }

    /// ` (through NAME)` for a path a member relays, nothing otherwise.
    static func through(_ member: Participant?) -> String {
        member.map { " (through \($0))" } ?? ""
    }

    /// `duration` in milliseconds to the microsecond, as `rtt_ms` fields print it (`peer`, `path-changed`).
    static func milliseconds(_ duration: Duration) -> Double {
        (duration / .microseconds(1)).rounded() / 1000
    }

    private static func describe(_ reason: ParticipantChange.DepartureReason) -> String {
        switch reason {
        case .left: "left"
        case .unreachable: "is unreachable"
        case .restarted: "restarted"
        case .removed: "was removed"
        }
    }

    func message(_ text: String, from source: Participant) {
        emit(
            "message",
            ["from": .string(source.id), "name": .string(source.name), "text": .string(text)],
            text: "\(source.name): \(text)")
    }
}
