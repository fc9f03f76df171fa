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
            `huddle join --lan NAME`. Exit status: 0 (also when nothing was heard), 1 when the network cannot be \
            listened to.
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
        let listening = Task {
            var seen: Set<String> = []
            for await nearby in heard where seen.insert(nearby.invitation.ticket).inserted {
                output.nearby(nearby)
            }
        }
        try? await Task.sleep(for: .seconds(seconds))
        listening.cancel()
        await listening.value
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
        let watching = Task {
            var listed: [String: NearbySession] = [:]
            for await sessions in lists {
                let now = Dictionary(
                    sessions.map { ($0.invitation.ticket, $0) }, uniquingKeysWith: { first, _ in first })
                for (ticket, session) in now where listed[ticket] == nil { output.nearby(session) }
                for (ticket, session) in listed where now[ticket] == nil { output.nearbyGone(session) }
                listed = now
            }
        }
        try? await Task.sleep(for: .seconds(seconds))
        watching.cancel()
        await watching.value
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
