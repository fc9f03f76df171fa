import DequeModule

/// An endpoint's connections by ``ConnectionID``, stored in an array so they are read and changed where they lie, with
/// the work lists that keep the endpoint's polls proportional to what changed rather than to how many connections it
/// has.
///
/// Why not a dictionary of connections: the endpoint reaches a connection several times per datagram, and a
/// dictionary's getter copies the whole ``Connection`` (retaining every one of its buffers) while changing a value in
/// place goes through an accessor that allocates. Here a sorted list of IDs maps an ID to a slot of the array (a
/// binary search over a handful of IDs is cheaper than hashing one, and the endpoint's IDs only grow, so adding one
/// appends). Hot paths look the slot up once with ``slot(of:)`` and then use ``withConnection(in:_:)``, which reads
/// and changes the connection in place; the ID subscript is for everything else (its accessors are coroutines, which
/// may allocate a frame). Slots of removed connections are reused, so the array never holds more slots than the most
/// connections that were alive at once.
///
/// Why work lists: a connection changes only when the endpoint calls into it (the core is sans-IO), so every change
/// goes through this table, which notes the slot as a candidate for events, for transmits and for a new deadline. The
/// endpoint then polls only candidates, and keeps each connection's deadline as of its last change: a 256-member
/// session's node (255 connections) scanned every connection for events, transmits and its deadline after every
/// datagram before (issue 34). A candidate that turns out to have nothing is dropped; time alone never gives a
/// connection something to send or report without one of its deadlines (the endpoint runs it then, which makes it a
/// candidate again).
struct ConnectionTable {
    /// The connections; `nil` marks a free slot. Change a connection only through ``withConnection(in:_:)`` or the ID
    /// subscript, which note the change; add and remove connections only through the ID subscript or
    /// ``removeValue(forKey:)``, so the slot map stays right.
    private(set) var slots: [Connection?] = []
    /// What the table knows of each slot besides its connection (one array: the endpoint is copied whole in tests
    /// and the simulator, and every array is a reference to retain).
    private var bookkeeping: [SlotBookkeeping] = []

    /// One slot's ID, occupancy, work lists and cached deadline.
    private struct SlotBookkeeping {
        /// The ID of the connection in the slot (meaningless for a free slot).
        var id: ConnectionID
        var occupied = true
        /// The work lists the slot is on; it is on a list exactly when its bit is set here.
        var candidacy: Candidacy = []
        /// The connection's ``Connection/nextDeadline`` as of its last change (`nil` for a free slot).
        var deadline: Instant?
    }
    /// The IDs of the connections, ascending, and the slot of each, position by position.
    private var ids: [ConnectionID] = []
    private var slotsByID: [Int] = []
    private var freeSlots: [Int] = []

    /// What a change to a connection may have given the endpoint to look at again.
    struct Candidacy: OptionSet {
        let rawValue: UInt8
        /// New events to poll.
        static let events = Candidacy(rawValue: 1)
        /// Datagrams to send.
        static let transmits = Candidacy(rawValue: 2)
        /// A different deadline.
        static let deadline = Candidacy(rawValue: 4)
        static let all: Candidacy = [.events, .transmits, .deadline]
    }

    /// Slots that may have events, in the order they became candidates.
    private(set) var eventCandidates = Deque<Int>()
    /// Slots that may have datagrams to send, in round-robin order.
    private(set) var transmitCandidates = Deque<Int>()
    /// Slots whose cached deadline may be out of date.
    private var staleDeadlines: [Int] = []

    /// The slot holding the connection with `id`, or `nil` if there is none.
    func slot(of id: ConnectionID) -> Int? {
        let position = position(of: id)
        guard position < ids.count, ids[position] == id else { return nil }
        return slotsByID[position]
    }

    /// Calls `body` with the connection in `slot` (which must hold one) where it lies, and returns its result; the
    /// slot becomes a candidate for events, transmits and a new deadline.
    ///
    /// For reads on hot paths too: reading `slots[slot]!.field` goes through the array's getter, which copies the
    /// whole connection (retaining and releasing each of its buffers) before picking the field; a modifying access
    /// does not copy.
    mutating func withConnection<Result, Failure: Error>(
        in slot: Int, _ body: (inout Connection) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        nominate(slot, for: .all)
        return try body(&slots[slot]!)
    }

    /// ``withConnection(in:_:)`` that makes the slot a candidate only for `candidacy`: for the endpoint's own polls,
    /// which know what the call can change (polling events cannot create events; reading cannot change anything).
    mutating func withConnection<Result, Failure: Error>(
        in slot: Int, nominating candidacy: Candidacy, _ body: (inout Connection) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        nominate(slot, for: candidacy)
        return try body(&slots[slot]!)
    }

    /// The ID of the connection in `slot` (which must hold one).
    func id(inSlot slot: Int) -> ConnectionID { bookkeeping[slot].id }

    /// Whether `slot` holds a connection (without reading the slot, which would copy the connection).
    func isOccupied(_ slot: Int) -> Bool { bookkeeping[slot].occupied }

    // MARK: - Work lists

    /// Puts `slot` on the lists `candidacy` names that it is not on yet.
    mutating func nominate(_ slot: Int, for candidacy: Candidacy) {
        let missing = candidacy.subtracting(bookkeeping[slot].candidacy)
        guard !missing.isEmpty else { return }
        bookkeeping[slot].candidacy.formUnion(missing)
        if missing.contains(.events) { eventCandidates.append(slot) }
        if missing.contains(.transmits) { transmitCandidates.append(slot) }
        if missing.contains(.deadline) { staleDeadlines.append(slot) }
    }

    /// Takes the first slot off the event candidates (it has no events left, or no connection).
    mutating func dropFirstEventCandidate() {
        let slot = eventCandidates.removeFirst()
        bookkeeping[slot].candidacy.remove(.events)
    }

    /// Takes the first slot off the transmit candidates (it has nothing to send now, or no connection).
    mutating func dropFirstTransmitCandidate() {
        let slot = transmitCandidates.removeFirst()
        bookkeeping[slot].candidacy.remove(.transmits)
    }

    /// Moves the first transmit candidate to the back: it sent a datagram and may have more, after the others.
    mutating func rotateTransmitCandidates() {
        transmitCandidates.append(transmitCandidates.removeFirst())
    }

    /// Brings the cached deadline of every changed connection up to date.
    private mutating func refreshDeadlines() {
        for slot in staleDeadlines {
            bookkeeping[slot].candidacy.remove(.deadline)
            bookkeeping[slot].deadline =
                bookkeeping[slot].occupied ? withConnection(in: slot, nominating: []) { $0.nextDeadline } : nil
        }
        staleDeadlines.removeAll(keepingCapacity: true)
    }

    /// The earliest deadline of any connection.
    mutating func earliestDeadline() -> Instant? {
        refreshDeadlines()
        var earliest: Instant?
        for slot in bookkeeping.indices {
            guard let deadline = bookkeeping[slot].deadline else { continue }
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// The slots whose connection's deadline is at or before `now`, in slot order.
    mutating func dueSlots(at now: Instant) -> [Int] {
        refreshDeadlines()
        return bookkeeping.indices.filter { bookkeeping[$0].deadline.map { $0 <= now } ?? false }
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
                nominate(slot, for: .all)
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
                nominate(slot, for: .all)
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
            bookkeeping[slot].id = id
            bookkeeping[slot].occupied = true
        } else {
            slot = slots.count
            slots.append(connection)
            bookkeeping.append(SlotBookkeeping(id: id))
        }
        let position = position(of: id)
        ids.insert(id, at: position)
        slotsByID.insert(slot, at: position)
        nominate(slot, for: .all)
    }

    private mutating func free(_ slot: Int, of id: ConnectionID) {
        let position = position(of: id)
        ids.remove(at: position)
        slotsByID.remove(at: position)
        freeSlots.append(slot)
        bookkeeping[slot].occupied = false
        // The work lists skip a free slot when they reach it; its deadline must not wake the endpoint meanwhile.
        bookkeeping[slot].deadline = nil
    }
}
