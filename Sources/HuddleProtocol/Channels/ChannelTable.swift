import HuddleWire

/// A connection's channels of one direction (its ``SendChannel``s or its ``ReceiveChannel``s), found by channel number
/// without hashing and kept in ascending channel order, which is also ``ChannelPriority`` order (control channels
/// have the lowest numbers, bulk channels the highest).
///
/// Why not a dictionary: the connection looks channels up several times per packet, and changing a dictionary value
/// in place goes through an accessor that allocates, while an array element is changed where it lies; the order also
/// saves sorting the channels for every packet. Channels are only ever added one at a time and removed all at once,
/// so the table holds at most 256 channels, and positions only shift when a channel is added.
struct ChannelTable<Channel: Sendable>: Sendable {
    /// The channels, in ascending channel order. Change elements in place (`channels[position].method()`); add
    /// channels only with ``insert(_:for:)``, so ``position(of:)`` stays right.
    var channels: [Channel] = []
    /// The channel numbers of ``channels``, position by position.
    private(set) var ids: [ChannelID] = []
    /// For each channel number, its position in ``channels`` plus one, or 0 if absent; empty until the first insert.
    private var positions: [UInt16] = []

    /// The number of channels.
    var count: Int { channels.count }

    /// Whether the table holds no channel.
    var isEmpty: Bool { channels.isEmpty }

    /// The position of `channel` in ``channels``, or `nil` if it has none.
    func position(of channel: ChannelID) -> Int? {
        guard !positions.isEmpty else { return nil }
        let stored = Int(positions[Int(channel.rawValue)])
        return stored == 0 ? nil : stored - 1
    }

    /// The channel with number `channel`, if any (a copy: use ``position(of:)`` to change it).
    subscript(channel: ChannelID) -> Channel? {
        position(of: channel).map { channels[$0] }
    }

    /// Adds `value` as channel `channel`, which must not be present yet, and returns its position.
    mutating func insert(_ value: Channel, for channel: ChannelID) -> Int {
        precondition(position(of: channel) == nil, "channel \(channel) is already in the table")
        if positions.isEmpty { positions = [UInt16](repeating: 0, count: Int(UInt8.max) + 1) }
        var position = ids.count
        while position > 0, ids[position - 1] > channel { position -= 1 }
        ids.insert(channel, at: position)
        channels.insert(value, at: position)
        for index in position..<ids.count { positions[Int(ids[index].rawValue)] = UInt16(index + 1) }
        return position
    }

    /// The position of `channel`, inserting `make()` for it first if it has none.
    mutating func position(of channel: ChannelID, inserting make: () -> Channel) -> Int {
        if let position = position(of: channel) { return position }
        return insert(make(), for: channel)
    }

    /// Removes every channel.
    mutating func removeAll() {
        channels.removeAll()
        ids.removeAll()
        positions.removeAll()
    }
}
