import ArgumentParser
import Foundation
import Huddle
import NIOConcurrencyHelpers

/// `huddle bench serve`: the passive side of a benchmark. Echoes probes, counts messages and bytes, and reports
/// when an attachment is complete, for any number of `huddle bench run`s, until SIGINT or SIGTERM.
struct BenchServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve benchmark runs; prints the ticket to use on its first line.")

    @OptionGroup var node: BenchNodeOptions

    @Option(help: "How long the printed ticket stays valid, in seconds.")
    var ticketLifetime: Int = 24 * 3600

    func run() async throws {
        Signals.install()
        let server: HuddleNode
        do {
            server = try await node.startNode(name: "bench-server")
        } catch {
            EventOutput(json: false).startFailed(error)
            throw ExitCode(1)
        }
        let session = try await server.activate(BenchActivity())
        try await session.join()
        print(try await session.makeInvitation(validFor: .seconds(ticketLifetime)).ticket)
        let messenger = Messenger(session: session)
        let journal = Journal(session: session)
        await withTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: node.executor(for: server)) { await Self.answer(messenger) }
            group.addTask { await Self.watch(journal, messenger: messenger) }
            group.addTask { _ = await Signals.first() }
            await group.next()
            group.cancelAll()
        }
        await session.leave()
        await server.shutdown()
    }

    /// Answers probes and counts rate and bulk traffic per client.
    static func answer(_ messenger: Messenger) async {
        var messages: [String: UInt64] = [:]
        var bytes: [String: UInt64] = [:]
        for await (data, context) in messenger.messages(of: Data.self) {
            let client = context.source
            switch BenchMessage(decoding: data) {
            case .echo:
                _ = try? await messenger.send(data, to: .only([client]))
            case .rateMessage:
                messages[client.id, default: 0] += 1
            case .rateEnd:
                let received = messages.removeValue(forKey: client.id) ?? 0
                _ = try? await messenger.send(BenchMessage.rateResult(received: received).encoded, to: .only([client]))
            case .bulkData:
                bytes[client.id, default: 0] += UInt64(data.count)
            case .bulkEnd:
                let received = bytes.removeValue(forKey: client.id) ?? 0
                _ = try? await messenger.send(BenchMessage.bulkResult(bytes: received).encoded, to: .only([client]))
            default:
                continue
            }
        }
    }

    /// Tells each attachment's author when this node holds all of it, then removes it (freeing the disk).
    static func watch(_ journal: Journal, messenger: Messenger) async {
        let watched = NIOLockedValueBox<Set<UUID>>([])
        await withTaskGroup(of: Void.self) { group in
            for await attachments in journal.attachmentUpdates {
                for attachment in attachments where watched.withLockedValue({ $0.insert(attachment.id).inserted }) {
                    group.addTask {
                        for await progress in attachment.progressUpdates where progress.isFinal {
                            guard case .complete = progress.status, let author = attachment.author else { return }
                            _ = try? await messenger.send(
                                BenchMessage.journalComplete(id: attachment.id).encoded, to: .only([author]))
                        }
                    }
                }
            }
        }
    }
}
