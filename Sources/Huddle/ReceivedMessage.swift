import HuddleProtocol

/// A message on its way to ``Messenger`` subscriptions.
struct ReceivedMessage: Sendable {
    var envelope: MessageEnvelope
    var source: Participant
    var reliable: Bool
}
