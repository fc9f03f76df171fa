import Foundation
import HuddleCLITestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `huddle host/join --metrics`: a Prometheus scrape of running nodes shows a chat and a transfer.
@Suite("huddle --metrics between processes")
struct MetricsProcessTests {
    /// The body of `GET url`.
    static func scrape(_ url: String) async throws -> String {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(
            (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain") == true)
        return String(decoding: data, as: UTF8.self)
    }

    /// The value of the sample `series` (name and labels exactly as printed) in a Prometheus text exposition.
    static func value(_ series: String, in text: String) -> Double? {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == series { return Double(parts[1]) }
        }
        return nil
    }

    @Test("A scrape shows the chat's messages, the transfer's chunks, the connection and the join")
    func scrapeDuringChatAndTransfer() async throws {
        let cluster = try HuddleCluster()
        defer { cluster.tearDown() }
        let (host, ticket) = try await cluster.host("host", extra: ["--metrics", "127.0.0.1:0"])
        let hostURL = try #require(try await host.waitForEvent("metrics", within: 10)["url"])
        #expect(hostURL.hasPrefix("http://127.0.0.1:"))
        let ada = try cluster.join(ticket, as: "ada", extra: ["--metrics", "0"])
        let adaURL = try #require(try await ada.waitForEvent("metrics", within: 20)["url"])
        try await ada.waitForEvent("joined", within: 35)
        try await host.waitForPeerCount(1)

        for index in 0..<5 { try host.send("hello \(index)") }
        for index in 0..<5 { try await ada.waitForEvent("message", ["text": "hello \(index)"], within: 10) }
        let source = try AttachmentProcessTests.makeFile("shared.bin", size: 3 << 20, in: cluster.directory)
        try host.send("/share \(source)")
        let id = try #require(try await host.waitForEvent("attachment-shared", within: 20)["id"])
        try await ada.waitForEvent("attachment-complete", ["id": id], within: 30)

        let atHost = try await Self.scrape(hostURL)
        let atAda = try await Self.scrape(adaURL)
        // The chat: five reliable messages out of the host, five into ada.
        #expect(Self.value(#"huddle_messages_sent_total{class="reliable"}"#, in: atHost) ?? 0 >= 5, "\(atHost)")
        #expect(Self.value(#"huddle_messages_received_total{class="reliable"}"#, in: atAda) ?? 0 >= 5, "\(atAda)")
        // The transfer: 3 MiB in 64 KiB chunks, served by the host and verified by ada.
        #expect(Self.value("huddle_attachment_chunks_sent_total", in: atHost) ?? 0 >= 48)
        #expect(Self.value("huddle_attachment_chunks_received_total", in: atAda) ?? 0 >= 48)
        #expect(Self.value("huddle_bytes_sent_total", in: atHost) ?? 0 >= Double(3 << 20))
        // The path and the session.
        #expect(Self.value("huddle_connections", in: atHost) == 1)
        #expect(Self.value("huddle_participants", in: atAda) == 2)
        #expect(Self.value("huddle_handshakes_completed_total", in: atAda) ?? 0 >= 1)
        #expect(Self.value("huddle_rtt_seconds_count", in: atHost) ?? 0 >= 1)
        #expect(Self.value("huddle_join_duration_seconds_count", in: atAda) == 1)
        #expect(Self.value(#"huddle_datagrams_dropped_total{reason="mac1"}"#, in: atHost) == 0)
        // Published even when nothing was refused (loopback carries every probe), so a dashboard can alert on it.
        #expect(Self.value("huddle_datagrams_refused_total", in: atHost) == 0)
        #expect(Self.value("huddle_socket_rebinds_total", in: atHost) == 0)
        // Anything but /metrics is not served.
        let (_, other) = try await URLSession.shared.data(from: URL(string: hostURL + "x")!)
        #expect((other as? HTTPURLResponse)?.statusCode == 404)
    }
}
