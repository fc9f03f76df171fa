import Huddle
import Testing

/// `import Huddle` alone names every type its public API reaches (issue 35: `TransportError` carried a
/// `ConnectionID` and a `ProtocolError` an app could not name without importing the protocol core). This file imports
/// nothing else, so it compiles only while the re-exports hold.
@Suite("What import Huddle alone names")
struct ReexportTests {
    @Test("The transport's errors and statistics, and what they carry, are nameable through Huddle")
    func transportTypes() {
        let errors: [TransportError] = [
            .connectionClosed(ConnectionID(7)),
            .protocolError(ProtocolError.closedByPeer(code: CloseCode.protocolViolation, reason: "test")),
        ]
        #expect(errors.count == 2)
        let violation: ProtocolViolation? = nil
        let endpoint: EndpointStatistics? = nil
        let congestion: HuddleNode.CongestionControl = .bbr
        #expect(violation == nil && endpoint == nil && congestion == .bbr)
    }
}
