import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// `--metrics HOST:PORT`: serves `GET /metrics` in the Prometheus text format over HTTP/1.1, and nothing else (404).
///
/// A few lines of SwiftNIO's own HTTP/1 codec rather than a web framework: one read-only endpoint does not justify
/// the build time of Hummingbird in every `huddle` build. Each scrape first asks the node to publish its current
/// figures (`refresh`), so counters are as of the scrape, not of the last sampling tick.
final class MetricsServer: Sendable {
    /// Where the server listens (the port the system chose for port 0).
    let localAddress: SocketAddress
    private let channel: any Channel

    private init(channel: any Channel) {
        self.channel = channel
        self.localAddress = channel.localAddress!
    }

    /// Binds `host:port` and serves `registry`.
    static func start(
        host: String, port: Int, registry: PrometheusCollectorRegistry,
        refresh: @escaping @Sendable () async -> Void
    ) async throws -> MetricsServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        ScrapeHandler(registry: registry, refresh: refresh))
                }
            }
            .bind(host: host, port: port).get()
        return MetricsServer(channel: channel)
    }

    /// Stops listening.
    func close() async {
        try? await channel.close()
    }
}

/// Answers one HTTP request at a time on a connection.
private final class ScrapeHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry
    let refresh: @Sendable () async -> Void
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry, refresh: @escaping @Sendable () async -> Void) {
        self.registry = registry
        self.refresh = refresh
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            guard head.method == .GET, head.uri == "/metrics" || head.uri.hasPrefix("/metrics?") else {
                respond(context: context, head: head, status: .notFound, body: Array("not found\n".utf8))
                return
            }
            let registry = self.registry
            let refresh = self.refresh
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.eventLoop.makeFutureWithTask { await refresh() }.whenComplete { _ in
                let (handler, context) = bound.value
                handler.respond(context: context, head: head, status: .ok, body: registry.emitToBuffer())
            }
        }
    }

    private func respond(
        context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, body: [UInt8]
    ) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.count)")
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let keepAlive = head.isKeepAlive
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}
