import NIOConcurrencyHelpers

/// Counts the unreliable sends handed to the event loop and not yet run there, so a sender need not wait for the
/// loop while it keeps up, and waits (the same back pressure as a reliable send) once it does not.
final class DatagramSendGate: Sendable {
    /// Batches (one per send, all recipients together) that may wait for the loop at once.
    static let limit = 256

    private let pending = NIOLockedValueBox(0)

    /// Takes a place for one batch; `false` when ``limit`` batches already wait (the sender should wait for the loop).
    func admit() -> Bool {
        pending.withLockedValue { pending in
            guard pending < Self.limit else { return false }
            pending += 1
            return true
        }
    }

    /// Gives an admitted batch's place back (it ran, or was dropped with a closed driver).
    func release() {
        pending.withLockedValue { $0 -= 1 }
    }

    /// Batches waiting for the loop now (for tests).
    var count: Int { pending.withLockedValue { $0 } }
}
