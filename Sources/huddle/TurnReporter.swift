import Huddle

/// Prints a `turn` event for each TURN allocation whose state changed, for as long as the node runs: all of them at
/// start, then each one granted, lost, failed, started or stood by (``HuddleNode/turnAllocationChanges()``), servers
/// a ticket brought when joining included.
enum TurnReporter {
    /// Starts reporting; the task ends when the node shuts down.
    static func start(_ node: HuddleNode, output: EventOutput) -> Task<Void, Never> {
        Task {
            var printed: [TurnAllocation] = []
            for await allocations in node.turnAllocationChanges() {
                for allocation in allocations where !printed.contains(allocation) { output.turn(allocation) }
                printed = allocations
            }
        }
    }
}
