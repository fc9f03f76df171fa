/// An endpoint's connections by ``ConnectionID``, stored in an array so they are read and changed where they lie.
///
/// Why not a dictionary of connections: the endpoint reaches a connection several times per datagram, and a
/// dictionary's getter copies the whole ``Connection`` (retaining every one of its buffers) while changing a value in
/// place goes through an accessor that allocates. Here a sorted list of IDs maps an ID to a slot of the array (a
/// binary search over a handful of IDs is cheaper than hashing one, and the endpoint's IDs only grow, so adding one
/// appends). Hot paths
/// look the slot up once with ``slot(of:)`` and then use `slots[slot]!` directly, which the compiler reads and changes
/// in place; the ID subscript is for everything else (its accessors are coroutines, which may allocate a frame).
/// Slots of removed connections are reused, so the array never holds more slots than the most connections that were
/// alive at once.
struct ConnectionTable {
    /// The connections; `nil` marks a free slot. Change a connection in place through `slots[slot]!`; add and remove
    /// connections only through the ID subscript or ``removeValue(forKey:)``, so the slot map stays right.
    var slots: [Connection?] = []
    /// The IDs of the connections, ascending, and the slot of each, position by position.
    private var ids: [ConnectionID] = []
    private var slotsByID: [Int] = []
    private var freeSlots: [Int] = []

    /// The slot holding the connection with `id`, or `nil` if there is none.
    func slot(of id: ConnectionID) -> Int? {
        let position = position(of: id)
        guard position < ids.count, ids[position] == id else { return nil }
        return slotsByID[position]
    }

    /// Calls `body` with the connection in `slot` (which must hold one) where it lies, and returns its result.
    ///
    /// For reads on hot paths too: reading `slots[slot]!.field` goes through the array's getter, which copies the
    /// whole connection (retaining and releasing each of its buffers) before picking the field; a modifying access
    /// does not copy.
    mutating func withConnection<Result, Failure: Error>(
        in slot: Int, _ body: (inout Connection) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try body(&slots[slot]!)
    }

    /// The connection with `id`, or `nil`. Assigning `nil` removes it; assigning to an absent ID adds it.
    subscript(id: ConnectionID) -> Connection? {
        _read {
            if let slot = slot(of: id) {
                yield slots[slot]
            } else {
                yield nil
            }
        }
        _modify {
            if let slot = slot(of: id) {
                yield &slots[slot]
                if case .none = slots[slot] { free(slot, of: id) }
            } else {
                var added: Connection? = nil
                yield &added
                if let added { insert(added, for: id) }
            }
        }
        set {
            if let slot = slot(of: id) {
                slots[slot] = newValue
                if newValue == nil { free(slot, of: id) }
            } else if let newValue {
                insert(newValue, for: id)
            }
        }
    }

    /// Removes and returns the connection with `id`, if any.
    mutating func removeValue(forKey id: ConnectionID) -> Connection? {
        guard let slot = slot(of: id) else { return nil }
        let connection = slots[slot].take()
        free(slot, of: id)
        return connection
    }

    /// The position of the first ID in `ids` that is not below `id` (`ids.count` if none).
    private func position(of id: ConnectionID) -> Int {
        var low = 0
        var high = ids.count
        while low < high {
            let middle = (low + high) / 2
            if ids[middle].rawValue < id.rawValue { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func insert(_ connection: Connection, for id: ConnectionID) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = connection
        } else {
            slot = slots.count
            slots.append(connection)
        }
        let position = position(of: id)
        ids.insert(id, at: position)
        slotsByID.insert(slot, at: position)
    }

    private mutating func free(_ slot: Int, of id: ConnectionID) {
        let position = position(of: id)
        ids.remove(at: position)
        slotsByID.remove(at: position)
        freeSlots.append(slot)
    }
}
