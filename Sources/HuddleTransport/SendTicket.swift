import NIOConcurrencyHelpers

/// Identifies one accepted or waiting send and carries its cancellation flag between the cancelling task and the
/// event loop.
///
/// The flag is set under a lock by the cancellation handler and read on the event loop, so a cancellation that
/// races the send's arrival on the loop is never lost: the loop checks the flag before handing the message to the
/// endpoint and on every retry.
final class SendTicket: Sendable {
    private let cancelled = NIOLockedValueBox(false)

    /// Whether the waiting task was cancelled.
    var isCancelled: Bool { cancelled.withLockedValue { $0 } }

    /// Marks the send cancelled.
    func cancel() { cancelled.withLockedValue { $0 = true } }
}
