import Foundation
import HuddleCLITestSupport
import HuddleCrypto
import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

/// TEST-MATRIX S-cases (issue 16, item 6): no secret ever reaches a log. Two nodes run a whole session at
/// `--log-level trace` (join, chat, an invitation, an attachment, leave) and everything they print on standard error
/// is searched for their private keys and for the session's invitations (the tickets, their secrets and the
/// admission keys derived from them) in every form a log line could carry them: hex in either case, base64, and
/// Swift's array description.
@Suite("Secrets never reach the logs")
struct SecretsInLogsTests {
    /// The forms in which `secret` could appear in text.
    static func renderings(of secret: [UInt8]) -> [String] {
        let hex = secret.map { String(format: "%02x", $0) }.joined()
        return [
            hex, hex.uppercased(), Data(secret).base64EncodedString(),
            Data(secret).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""),
            // The first eight bytes as `[1, 2, ...` (an array printed whole starts this way).
            "[" + secret.prefix(8).map(String.init).joined(separator: ", "),
        ]
    }

    @Test("A traced session prints neither node's private keys nor its invitations' secrets")
    func noKeysInTraceLogs() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let trace = ["--log-level", "trace"]
        let (host, ticket) = try await cluster.host("host", extra: trace)
        let guest = try cluster.join(ticket, as: "guest", extra: trace)
        try await guest.waitForEvent("joined", within: 35)
        try await host.waitForPeerCount(1)
        try host.send("hello from host")
        try guest.send("hello from guest")
        try await guest.waitForEvent("line") { $0.name == "message" && $0["text"] == "hello from host" }
        try await host.waitForEvent("line") { $0.name == "message" && $0["text"] == "hello from guest" }
        let file = "\(cluster.directory)/shared.bin"
        #expect(FileManager.default.createFile(atPath: file, contents: Data(repeating: 7, count: 200_000)))
        try host.send("/share \(file)")
        let shared = try await host.waitForEvent("attachment-shared", within: 20)
        try await guest.waitForEvent("attachment-complete", ["id": shared["id"] ?? ""], within: 30)
        try guest.send("/invite")
        let invite = try await guest.waitForEvent("ticket", within: 10)
        try guest.send("/leave")
        _ = try await guest.waitForExit(within: 15)
        try host.send("/leave")
        _ = try await host.waitForExit(within: 15)

        let logs = host.stderrLines + guest.stderrLines
        #expect(logs.count > 0, "trace logging printed nothing, so this test would prove nothing")
        for name in ["host", "guest"] {
            let contents = try Data(contentsOf: URL(fileURLWithPath: cluster.identityPath(name)))
            let identity = try IdentityFile.decode([UInt8](contents))
            let secrets = [
                ("Ed25519 seed", identity.signingKey.seed.copyToArray()),
                ("X25519 secret", identity.agreementKey.secret.copyToArray()),
            ]
            for (what, secret) in secrets {
                for rendering in Self.renderings(of: secret) {
                    let leaks = logs.filter { $0.contains(rendering) }
                    #expect(leaks.isEmpty, "\(name)'s \(what) appears in the logs: \(leaks.prefix(2))")
                }
            }
        }
        for (whose, text) in [("host's ticket", ticket), ("guest's /invite ticket", invite["ticket"] ?? "")] {
            let invitation = try Invitation(parsing: text)
            let admission = try SessionKeys.admissionCredentials(invitationSecret: invitation.secret)
            let leaks = logs.filter { $0.contains(text.dropFirst(Invitation.prefix.count)) }
            #expect(leaks.isEmpty, "the \(whose) appears in the logs: \(leaks.prefix(2))")
            let secrets = [
                ("secret", invitation.secret.copyToArray()),
                ("admission preshared key", admission.presharedKey.copyToArray()),
                ("admission mac secret", admission.macSecret.copyToArray()),
            ]
            for (what, secret) in secrets {
                for rendering in Self.renderings(of: secret) {
                    let leaks = logs.filter { $0.contains(rendering) }
                    #expect(leaks.isEmpty, "the \(whose)'s \(what) appears in the logs: \(leaks.prefix(2))")
                }
            }
        }
        print("secrets: searched \(logs.count) trace lines of two nodes for their private keys and invitations")
    }
}
