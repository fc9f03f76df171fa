import ArgumentParser
import Foundation
import Huddle

/// `huddle discover`: lists the sessions members announce on the local network (`huddle host --lan NAME`).
struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover",
        abstract: "List the sessions announced on the local network.",
        discussion: """
            Listens for announcements (UDP multicast to \(NearbySession.multicastGroup):\(NearbySession.port)) for a few \
            seconds and prints each session once: its name, the announcing member and its address. Join one with \
            `huddle join --lan NAME`. Exit status: 0 when a session was heard, 1 when the network cannot be \
            listened to, 2 when nothing was heard (a `nothing-found` event).

            Examples:
              huddle discover
              huddle discover --seconds 10 --json
              huddle discover --watch --seconds 60
            """
    )

    @Option(help: "How long to listen, in seconds.")
    var seconds: Double = 3

    @Flag(help: "Print one JSON object per line ({\"event\":\"nearby\",...}).")
    var json = false

    @Flag(
        help: ArgumentHelp(
            "Keep listing for --seconds: print each session when it appears and again (nearby-gone) when its "
                + "announcements stop (3 s without one) or its ticket expires."))
    var watch = false

    func run() async throws {
        let output = EventOutput(json: json)
        if watch {
            try await runWatching(output)
            return
        }
        let heard: AsyncStream<NearbySession>
        do {
            heard = try await NearbySession.browse()
        } catch {
            output.error(code: "discover-failed", "\(error)")
            throw ExitCode(1)
        }
        output.waiting(for: "sessions announced on the local network", seconds: seconds)
        let listening = Task {
            var seen: Set<String> = []
            for await nearby in heard where seen.insert(nearby.invitation.ticket).inserted {
                output.nearby(nearby)
            }
            return seen.count
        }
        try? await Task.sleep(for: .seconds(seconds))
        listening.cancel()
        try Self.finish(found: await listening.value, seconds: seconds, output: output)
    }

    /// Exit status 2 with a `nothing-found` event when no session was heard in `seconds`.
    static func finish(found: Int, seconds: Double, output: EventOutput) throws {
        guard found == 0 else { return }
        output.emit(
            "nothing-found", ["seconds": .number(seconds)],
            text: "no session was announced on the local network within \(EventOutput.seconds(seconds)) "
                + "(huddle host --lan NAME announces one; multicast must reach this machine)")
        throw ExitCode(2)
    }
}

extension DiscoverCommand {
    /// `--watch`: appearances and disappearances for `seconds`.
    func runWatching(_ output: EventOutput) async throws {
        let lists: AsyncStream<[NearbySession]>
        do {
            lists = try await NearbySession.watch()
        } catch {
            output.error(code: "discover-failed", "\(error)")
            throw ExitCode(1)
        }
        output.waiting(for: "sessions announced on the local network", seconds: seconds)
        let watching = Task {
            var listed: [String: NearbySession] = [:]
            var found = 0
            for await sessions in lists {
                let now = Dictionary(
                    sessions.map { ($0.invitation.ticket, $0) }, uniquingKeysWith: { first, _ in first })
                for (ticket, session) in now where listed[ticket] == nil {
                    output.nearby(session)
                    found += 1
                }
                for (ticket, session) in listed where now[ticket] == nil { output.nearbyGone(session) }
                listed = now
            }
            return found
        }
        try? await Task.sleep(for: .seconds(seconds))
        watching.cancel()
        try Self.finish(found: await watching.value, seconds: seconds, output: output)
    }
}

/// Finds the session announced as `name` for `join --lan`.
enum NearbyLookup {
    /// The first announcement of `name` heard within `seconds`, or `nil`.
    static func find(_ name: String, within seconds: Double) async throws -> NearbySession? {
        let heard = try await NearbySession.browse()
        return await withTaskGroup(of: NearbySession?.self) { group in
            group.addTask {
                for await nearby in heard where nearby.name == name { return nearby }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
