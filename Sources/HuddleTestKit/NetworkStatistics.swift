/// What happened to the datagrams in a simulated run.
public struct NetworkStatistics: Sendable, Hashable {
    /// Datagrams nodes handed to the network.
    public var sent = 0
    /// Datagrams handed to a node (duplicates included).
    public var delivered = 0
    /// Bytes handed to nodes.
    public var deliveredBytes = 0
    /// Dropped by random or bursty loss.
    public var lost = 0
    /// Dropped because the link was down (partition, blackhole).
    public var droppedLinkDown = 0
    /// Dropped for exceeding the path MTU.
    public var droppedOverMTU = 0
    /// Dropped by a full bandwidth queue.
    public var droppedQueueFull = 0
    /// Dropped because no node has the destination address, or it had crashed.
    public var droppedUnroutable = 0
    /// Datagrams a NAT did not let in (no mapping, or not from an address the inside sent to).
    public var droppedByNAT = 0
    /// Delivered damaged.
    public var corrupted = 0
    /// Delivered twice.
    public var duplicated = 0
    /// The largest datagram any node sent.
    public var largestDatagram = 0
}
