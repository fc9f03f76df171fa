import Huddle

/// Prints an event for each item of a node's state list that changed, for as long as the node runs: every item at
/// start, then each one that differs from what was printed last. Two lists are reported this way: TURN allocations
/// (`turn` events: granted, lost, failed, started or stood by, servers a ticket brought when joining included) and
/// port mappings (`port-mapping` events: mapped, moved, refused, unanswered).
enum StateReporter {
    /// Starts reporting `changes`, printing each changed item with `print`; the task ends when the stream does (at
    /// the node's shutdown).
    /// Items `worthPrinting` rejects are skipped (a port mapping still being asked for says nothing yet).
    static func start<Item: Equatable & Sendable>(
        _ changes: AsyncStream<[Item]>, worthPrinting: @escaping @Sendable (Item) -> Bool = { _ in true },
        print: @escaping @Sendable (Item) -> Void
    ) -> Task<Void, Never> {
        Task {
            var printed: [Item] = []
            for await items in changes {
                for item in items where !printed.contains(item) && worthPrinting(item) { print(item) }
                printed = items
            }
        }
    }

    /// Reports `node`'s TURN allocations and port mappings to `output`: a port mapping once it is mapped or failed,
    /// and at each change after that.
    static func start(_ node: HuddleNode, output: EventOutput) {
        _ = start(node.turnAllocationChanges()) { output.turn($0) }
        _ = start(node.portMappingChanges(), worthPrinting: { $0.externalAddress != nil || $0.failure != nil }) {
            output.portMapping($0)
        }
    }
}
