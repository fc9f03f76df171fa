import HuddleCrypto

@testable import HuddleProtocol
@testable import HuddleSession

/// Several ``JournalState``s wired to each other without a network: sends are delivered in order through one FIFO,
/// store actions go to per-node dictionaries. Lets the state machine's rules be tested step by step.
struct JournalHarness {
    var nodes: [JournalState]
    var stores: [[AttachmentID: [Int: [UInt8]]]]
    var events: [[JournalEvent]]
    var keys: [X25519PublicKey]
    var links: Set<[Int]> = []
    var inbox: [(from: Int, to: Int, bytes: [UInt8])] = []
    var now = Instant.zero
    /// Nodes whose outgoing chunks are corrupted.
    var corrupting: Set<Int> = []
    /// Nodes that never answer chunk requests.
    var silent: Set<Int> = []
    /// Nodes whose leaf-list requests to them are lost (a connection being replaced, a frozen process).
    var leavesLostTo: Set<Int> = []
    /// Whether every message is delivered twice, the copy after everything queued meanwhile (a member that re-sends,
    /// TEST-MATRIX R6).
    var duplicating = false
    /// Errors each node threw on a peer's message (the connection would be closed).
    var violations: [(node: Int, from: Int, error: JournalError)] = []
    /// Chunk requests each node sent, by target.
    var requests: [[Int: Int]]
    /// The most requests one node had outstanding to one peer, and overall, at any step.
    var peakPerPeer = 0
    var peakOverall = 0
    /// The second copies while ``duplicating``: delivered once the inbox is empty, so they arrive late.
    var pendingCopies: [(from: Int, to: Int, bytes: [UInt8])] = []
    /// Second copies handed to the inbox so far.
    var copiesDelivered = 0

    init(count: Int) {
        keys = (0..<count).map { index in try! X25519PublicKey(bytes: [UInt8](repeating: UInt8(index + 1), count: 32)) }
        nodes = keys.map { JournalState(local: $0) }
        stores = Array(repeating: [:], count: count)
        events = Array(repeating: [], count: count)
        requests = Array(repeating: [:], count: count)
    }

    /// Makes `a` and `b` active to each other.
    mutating func connect(_ a: Int, _ b: Int) {
        links.insert([min(a, b), max(a, b)])
        nodes[a].peerActive(keys[b], now: now)
        nodes[b].peerActive(keys[a], now: now)
        pump()
    }

    mutating func disconnect(_ a: Int, _ b: Int) {
        links.remove([min(a, b), max(a, b)])
        inbox.removeAll { ($0.from == a && $0.to == b) || ($0.from == b && $0.to == a) }
        nodes[a].peerInactive(keys[b], now: now)
        nodes[b].peerInactive(keys[a], now: now)
        pump()
    }

    /// Authors `data` on node `index`.
    @discardableResult
    mutating func share(_ data: [UInt8], id: AttachmentID, on index: Int) throws -> AttachmentManifest {
        let manifest = try JournalFixtures.manifest(data, id: id)
        var offset = 0
        var chunk = 0
        while offset < data.count {
            stores[index][id, default: [:]][chunk] = Array(
                data[offset..<min(offset + MerkleTree.chunkSize, data.count)])
            offset += MerkleTree.chunkSize
            chunk += 1
        }
        try nodes[index].add(manifest, leaves: JournalFixtures.leaves(data).leaves, now: now)
        pump()
        return manifest
    }

    func assembled(_ id: AttachmentID, on index: Int) -> [UInt8] {
        guard let chunks = stores[index][id] else { return [] }
        return chunks.keys.sorted().flatMap { chunks[$0]! }
    }

    /// Applies actions and delivers messages until nothing is left.
    mutating func pump(maxSteps: Int = 1_000_000) {
        var steps = 0
        while steps < maxSteps {
            steps += 1
            var progressed = false
            for index in nodes.indices {
                while let action = nodes[index].pollAction() {
                    progressed = true
                    apply(action, on: index)
                }
                for (_, count) in nodes[index].requestsTo { peakPerPeer = max(peakPerPeer, count) }
                peakOverall = max(peakOverall, nodes[index].requestsInFlight)
            }
            if inbox.isEmpty, !pendingCopies.isEmpty {
                inbox = pendingCopies.filter { links.contains([min($0.from, $0.to), max($0.from, $0.to)]) }
                copiesDelivered += inbox.count
                pendingCopies.removeAll()
            }
            if !inbox.isEmpty {
                progressed = true
                let message = inbox.removeFirst()
                do {
                    try nodes[message.to].receive(message.bytes, from: keys[message.from], now: now)
                } catch {
                    violations.append((message.to, message.from, error))
                }
            }
            if !progressed { return }
        }
    }

    /// Advances time to `instant`, running every node's timers.
    mutating func advance(to instant: Instant) {
        now = instant
        for index in nodes.indices { nodes[index].handleTimeout(now: now) }
        pump()
    }

    private mutating func apply(_ action: JournalAction, on index: Int) {
        switch action {
        case .send(var bytes, _, let peer):
            let target = keys.firstIndex(of: peer)!
            guard links.contains([min(index, target), max(index, target)]) else { return }
            switch try? JournalMessage(decoding: bytes) {
            case .chunkRequest:
                requests[index][target, default: 0] += 1
                if silent.contains(target) { return }
            case .leavesRequest:
                if leavesLostTo.contains(target) { return }
            default:
                break
            }
            if corrupting.contains(index),
                case .chunk(let id, let chunk, var data) = try? JournalMessage(decoding: bytes)
            {
                data[0] ^= 0xFF
                bytes = JournalMessage.chunk(id, index: chunk, bytes: data).encoded()
            }
            inbox.append((index, target, bytes))
            if duplicating { pendingCopies.append((index, target, bytes)) }
        case .writeChunk(let id, let chunk, let bytes):
            stores[index][id, default: [:]][chunk] = bytes
        case .readChunk(let id, let chunk, let peer):
            nodes[index].chunkRead(id, index: chunk, bytes: stores[index][id]?[chunk], for: peer, now: now)
        case .scanStore(let id):
            for (chunk, bytes) in (stores[index][id] ?? [:]).sorted(by: { $0.key < $1.key }) {
                nodes[index].storedChunk(id, index: chunk, bytes: bytes)
            }
            nodes[index].storeScanned(id, now: now)
        case .deleteAttachment(let id):
            stores[index][id] = nil
        case .event(let event):
            events[index].append(event)
        }
    }
}
