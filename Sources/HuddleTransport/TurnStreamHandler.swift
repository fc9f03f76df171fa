import HuddleProtocol
import NIOCore

/// The pipeline end of one TCP connection to a TURN server (``TurnTransport/tcp``): hands what it reads to the
/// endpoint's ``Endpoint/handleTurnStream(_:from:now:)`` (in place, in whatever chunks TCP delivers) and tells the
/// ``EndpointChannelHandler`` that owns the endpoint when the connection can take more or has closed.
///
/// Threading: it lives on the UDP channel's event loop (the connection is made on that loop), like its owner.
final class TurnStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let server: TurnServerAddress
    /// The owner: weak, as the owner keeps the channel (and so this handler) alive, not the other way round.
    weak var owner: EndpointChannelHandler?

    init(server: TurnServerAddress, owner: EndpointChannelHandler) {
        self.server = server
        self.owner = owner
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard let owner, !owner.isClosed else { return }
        owner.statistics.turnStreamBytesReceived += buffer.readableBytes
        buffer.withUnsafeMutableReadableBytes { chunk in
            owner.endpoint.handleTurnStream(chunk, from: server, now: owner.clock.now)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard let owner, !owner.isClosed else { return }
        owner.afterInput()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let owner, !owner.isClosed { owner.afterInput() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        owner?.turnStreamClosed(server, channel: context.channel)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset or a refused write: the connection is done; `channelInactive` reports it.
        context.close(promise: nil)
    }
}
