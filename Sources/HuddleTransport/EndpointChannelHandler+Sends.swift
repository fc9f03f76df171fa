import HuddleProtocol

extension EndpointChannelHandler {
    /// The drain task the first send after a drain schedules: hands everything queued to the endpoint, then sends.
    func drainOutbound() {
        guard !isClosed else { return }
        serviceSends()
        if events.hasUnsentReports { deliverEvents() }
        flushTransmits(budget: settings.maxDatagramsPerFlush)
        rearmTimer()
    }

    /// Hands queued and waiting messages to the endpoint (see ``SendIntake/service(_:_:_:)``).
    func serviceSends() {
        if sends.service(&endpoint, &statistics, &events) { scheduleDrain() }
    }

    /// Schedules a drain task on the event loop (the queue said none is pending).
    func scheduleDrain() {
        loop.assumeIsolated().execute { self.drainOutbound() }
    }

    /// Fails the send holding `ticket` with ``TransportError/cancelled`` if it is still waiting on the event loop.
    func cancelSend(_ ticket: SendTicket) {
        if sends.cancel(ticket, &endpoint, &statistics, &events) { scheduleDrain() }
    }

    /// Fails everything queued, waiting or on the event loop (the driver is closing).
    func failAllSends() {
        sends.failAll(&endpoint, &statistics, &events)
    }
}
