import HuddleProtocol
import NIOCore
import NIOPosix

extension EndpointChannelHandler {
    /// How long connecting to a TURN server over TCP may take before it counts as failed (a firewall that drops the
    /// SYN answers nothing at all).
    static let turnStreamConnectTimeout: TimeAmount = .seconds(5)

    /// Carries out what the endpoint wants of its TCP connections to TURN servers (open, close), then writes what
    /// each open connection has waiting, as long as the connection takes more.
    func serviceTurnStreams() {
        while let (server, command) = endpoint.pollTurnStreamCommand() {
            switch command {
            case .open: openTurnStream(to: server)
            case .close:
                guard let channel = turnStreams.removeValue(forKey: server) else { continue }
                if let channel {
                    // The last bytes (a Refresh deleting the allocation) go before the close.
                    writeTurnStream(server, on: channel, whileWritable: false)
                    channel.close(promise: nil)
                }
            }
        }
        for case (let server, let channel?) in turnStreams where channel.isWritable {
            writeTurnStream(server, on: channel, whileWritable: true)
        }
    }

    /// Writes the endpoint's bytes for `server` and flushes; `whileWritable`, only while the channel takes more (the
    /// rest waits in the endpoint, which bounds it).
    private func writeTurnStream(_ server: TurnServerAddress, on channel: any Channel, whileWritable: Bool) {
        var wrote = false
        while !whileWritable || channel.isWritable, let bytes = endpoint.pollTurnStreamBytes(to: server) {
            channel.write(channel.allocator.buffer(bytes: bytes), promise: nil)
            statistics.turnStreamBytesSent += bytes.count
            wrote = true
        }
        if wrote { channel.flush() }
    }

    /// Connects to `server` over TCP on this handler's event loop; the endpoint hears how it went.
    private func openTurnStream(to server: TurnServerAddress) {
        // `nil` while connecting: a close meanwhile removes the entry, and the connection is then closed on arrival.
        turnStreams[server] = .some(nil)
        let address = addresses.socketAddress(for: server.address)
        ClientBootstrap(group: loop)
            .connectTimeout(Self.turnStreamConnectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connect(to: address)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    guard !self.isClosed, let entry = self.turnStreams[server], entry == nil else {
                        channel.close(promise: nil)
                        return
                    }
                    do {
                        try channel.pipeline.syncOperations.addHandler(TurnStreamHandler(server: server, owner: self))
                    } catch {
                        channel.close(promise: nil)
                        return
                    }
                    self.turnStreams[server] = channel
                    self.endpoint.turnStreamOpened(server, now: self.clock.now)
                case .failure:
                    guard !self.isClosed, let entry = self.turnStreams[server], entry == nil else { return }
                    self.turnStreams[server] = nil
                    self.statistics.turnStreamConnectFailures += 1
                    self.endpoint.turnStreamClosed(server, now: self.clock.now)
                }
                self.afterInput()
            }
    }

    /// The TCP connection `channel` to `server` closed: the endpoint loses that allocation (unless it asked for the
    /// close itself, or a newer connection has replaced this one).
    func turnStreamClosed(_ server: TurnServerAddress, channel: any Channel) {
        guard let entry = turnStreams[server], let current = entry, current === channel else { return }
        turnStreams[server] = nil
        guard !isClosed else { return }
        endpoint.turnStreamClosed(server, now: clock.now)
        afterInput()
    }

    /// Closes every TCP connection to a TURN server (the endpoint is shutting down).
    func closeTurnStreams() {
        for case let channel? in turnStreams.values { channel.close(promise: nil) }
        turnStreams.removeAll()
    }
}
