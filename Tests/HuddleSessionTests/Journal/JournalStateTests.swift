import HuddleCrypto
import Testing

@testable import HuddleProtocol
@testable import HuddleSession

@Suite("Journal state machine")
struct JournalStateTests {
    static func completed(_ harness: JournalHarness, _ id: AttachmentID, on index: Int) -> Bool {
        harness.events[index].contains(.completed(id))
    }

    @Test(
        "T2/T3: sizes 0, 1, 65535, 65536, 65537 arrive byte-identical at two receivers",
        arguments: [0, 1, 65_535, 65_536, 65_537, 300_000])
    func sizes(size: Int) throws {
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        harness.connect(0, 2)
        harness.connect(1, 2)
        let data = JournalFixtures.data(size)
        let id = JournalFixtures.id(1)
        try harness.share(data, id: id, on: 0)
        for receiver in 1...2 {
            #expect(Self.completed(harness, id, on: receiver), "receiver \(receiver)")
            #expect(JournalFixtures.identical(harness.assembled(id, on: receiver), data))
            #expect(harness.nodes[receiver].verifiedBytes(id) == UInt64(size))
            #expect(harness.events[receiver].first == .added(try JournalFixtures.manifest(data, id: id)))
        }
        #expect(harness.violations.isEmpty)
        #expect(harness.peakPerPeer <= ProtocolLimits.maxChunkRequestsPerPeer)
    }

    @Test("Requests go to every holder, within the per-peer (8) and overall (64) limits; receivers swap chunks")
    func swarm() throws {
        var harness = JournalHarness(count: 5)
        for a in 0..<5 { for b in (a + 1)..<5 { harness.connect(a, b) } }
        let data = JournalFixtures.data(40 * 65_536)
        let id = JournalFixtures.id(2)
        try harness.share(data, id: id, on: 0)
        for receiver in 1..<5 {
            #expect(JournalFixtures.identical(harness.assembled(id, on: receiver), data))
            let fromPeers = harness.requests[receiver].filter { $0.key != 0 }.values.reduce(0, +)
            #expect(
                fromPeers > 0, "receiver \(receiver) fetched from other receivers too: \(harness.requests[receiver])")
        }
        #expect(harness.peakPerPeer == ProtocolLimits.maxChunkRequestsPerPeer)
        #expect(harness.peakOverall <= ProtocolLimits.maxChunkRequestsInFlight)
        for index in 0..<5 { #expect(harness.nodes[index].outstandingRequests == 0) }
    }

    @Test("F10/T4: a holder serving bad chunks is avoided after 3; chunks come from honest holders")
    func badHolder() throws {
        var harness = JournalHarness(count: 4)
        harness.connect(0, 1)
        harness.connect(0, 2)
        let data = JournalFixtures.data(30 * 65_536 + 17)
        let id = JournalFixtures.id(3)
        try harness.share(data, id: id, on: 0)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data))
        harness.corrupting = [1]
        harness.connect(1, 3)
        harness.connect(2, 3)
        harness.connect(0, 3)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 3), data))
        #expect(harness.nodes[3].avoidedHolders(id) == [harness.keys[1]])
        // Requests already in flight to it when it was found out come back bad too; none are sent after.
        #expect(harness.nodes[3].badChunksReceived >= ProtocolLimits.maxBadChunksPerHolder)
        #expect(
            harness.nodes[3].badChunksReceived
                < ProtocolLimits.maxBadChunksPerHolder + ProtocolLimits.maxChunkRequestsPerPeer)
        #expect(harness.violations.isEmpty, "bad chunks are not protocol violations (the holder's disk may be bad)")
    }

    @Test("F9: a leaf list that does not match the root is discarded and fetched from another holder")
    func badLeaves() throws {
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        let data = JournalFixtures.data(5 * 65_536)
        let id = JournalFixtures.id(4)
        try harness.share(data, id: id, on: 0)
        // Node 1's copy of the leaf list is damaged (as if its memory were): it serves a wrong list.
        harness.nodes[1].attachments[id]!.leaves![3] ^= 1
        harness.connect(1, 2)
        #expect(harness.nodes[2].leaf(id, index: 0) == nil, "no list accepted from the only (bad) holder")
        harness.connect(0, 2)
        #expect(harness.nodes[2].attachments[id]!.badLeavesFrom == [harness.keys[1]])
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data))
    }

    @Test(
        "D6: requests to a silent holder time out after 10 s and go to another; the silent one is probed one at a time")
    func stalledHolder() throws {
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        let data = JournalFixtures.data(20 * 65_536)
        let id = JournalFixtures.id(5)
        try harness.share(data, id: id, on: 0)
        harness.silent = [0]
        harness.connect(0, 2)
        harness.connect(1, 2)
        #expect(harness.nodes[2].requestsTo[harness.keys[0]] == ProtocolLimits.maxChunkRequestsPerPeer)
        #expect(!harness.nodes[2].isComplete(id), "the 8 chunks asked of the silent author are missing")
        harness.advance(to: harness.now + .seconds(9))
        #expect(harness.nodes[2].requestTimeouts == 0)
        harness.advance(to: harness.now + .seconds(1))
        #expect(harness.nodes[2].requestTimeouts == 8)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data), "node 1 served the rest")
        #expect(harness.nodes[2].outstandingRequests == 0)

        // Node 1 leaves; only the silent author holds a new attachment: it is probed with one request at a time.
        harness.disconnect(1, 2)
        let other = JournalFixtures.data(3 * 65_536)
        let second = JournalFixtures.id(6)
        try harness.share(other, id: second, on: 0)
        #expect(harness.nodes[2].outstandingRequests == 1)
        harness.silent = []
        harness.advance(to: harness.now + .seconds(10))
        #expect(harness.nodes[2].requestTimeouts == 9)
        #expect(JournalFixtures.identical(harness.assembled(second, on: 2), other), "it answered again")
    }

    @Test("A leaf-list request that times out at every holder is asked again; the download never waits without a timer")
    func leavesTimeoutsRetry() throws {
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        let data = JournalFixtures.data(6 * 65_536)
        let id = JournalFixtures.id(7)
        try harness.share(data, id: id, on: 0)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 1), data))
        // Node 2 meets both holders while its leaf-list requests to them are lost (in the soak: a request sent on a
        // connection being replaced, then a holder frozen). Each times out after 10 s.
        harness.leavesLostTo = [0, 1]
        harness.connect(0, 2)
        harness.connect(1, 2)
        harness.advance(to: harness.now + .seconds(10))
        harness.advance(to: harness.now + .seconds(10))
        #expect(harness.nodes[2].attachments[id]!.leavesTimedOut.count == 2, "both holders timed out once")
        #expect(harness.nodes[2].attachments[id]!.badLeavesFrom.isEmpty, "a timeout is not a bad list")
        #expect(harness.nodes[2].nextDeadline != nil, "the download still has a timer: it asks again")
        // The holders answer again: the next retry fetches the list and the download completes.
        harness.leavesLostTo = []
        harness.advance(to: harness.now + .seconds(10))
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data))
    }

    @Test("D5: 20 announced attachments: 16 download at once, 4 wait, all complete")
    func concurrency() throws {
        var harness = JournalHarness(count: 2)
        for index in 0..<20 {
            try harness.share(JournalFixtures.data(65_536 + index), id: JournalFixtures.id(UInt8(100 + index)), on: 0)
        }
        // Deliver announcements without letting any download progress: look at the first node's state directly.
        harness.links.insert([0, 1])
        harness.nodes[0].peerActive(harness.keys[1], now: harness.now)
        harness.nodes[1].peerActive(harness.keys[0], now: harness.now)
        while let action = harness.nodes[0].pollAction() {
            guard case .send(let bytes, _, _) = action else { continue }
            try harness.nodes[1].receive(bytes, from: harness.keys[0], now: harness.now)
        }
        #expect(harness.nodes[1].runningDownloads.count == ProtocolLimits.maxConcurrentDownloads)
        #expect(harness.nodes[1].queuedDownloads.count == 4)
        harness.pump()
        for index in 0..<20 {
            let id = JournalFixtures.id(UInt8(100 + index))
            #expect(JournalFixtures.identical(harness.assembled(id, on: 1), JournalFixtures.data(65_536 + index)))
        }
        #expect(harness.nodes[1].runningDownloads.isEmpty)
    }

    @Test("D6: a download that verifies nothing for 120 s while others wait is paused, frees its slot, and resumes")
    func pausedDownload() throws {
        var harness = JournalHarness(count: 2)
        let count = ProtocolLimits.maxConcurrentDownloads + 1
        let ids = (0..<count).map { JournalFixtures.id(UInt8(150 + $0)) }
        let contents = (0..<count).map { JournalFixtures.data(2 * 65_536 + $0) }
        for (id, data) in zip(ids, contents) { try harness.share(data, id: id, on: 0) }
        harness.silent = [0]
        harness.connect(0, 1)
        #expect(harness.nodes[1].runningDownloads == Array(ids.prefix(ProtocolLimits.maxConcurrentDownloads)))
        #expect(harness.nodes[1].queuedDownloads == [ids.last!])

        harness.advance(to: harness.now + .seconds(119))
        #expect(!harness.events[1].contains { if case .paused = $0 { true } else { false } })
        harness.advance(to: harness.now + .seconds(2))
        let paused = harness.events[1].compactMap { event -> AttachmentID? in
            if case .paused(let id) = event { return id }
            return nil
        }
        // Each stalled download in turn gives up its slot to the one waiting (which then waits itself, keeping its
        // verified chunks): the rotation means no download holds a slot forever while another waits.
        #expect(paused.first == ids[0], "the oldest stalled download gave up its slot first")
        #expect(harness.nodes[1].runningDownloads.contains(ids.last!), "the waiting one got a slot")
        #expect(harness.nodes[1].runningDownloads.count == ProtocolLimits.maxConcurrentDownloads)
        #expect(harness.nodes[1].queuedDownloads.count == 1)
        #expect(Set(paused).isSubset(of: Set(ids)) && paused.count >= 1)

        // The holder answers again: every download, paused ones included, completes.
        harness.silent = []
        for _ in 0..<30 where !ids.allSatisfy({ harness.nodes[1].isComplete($0) }) {
            harness.advance(to: harness.now + .seconds(10))
        }
        for (id, data) in zip(ids, contents) {
            #expect(JournalFixtures.identical(harness.assembled(id, on: 1), data))
        }
    }

    @Test("T5/T6: a restarted receiver scans its store, re-fetches only missing and damaged chunks")
    func resumption() throws {
        var harness = JournalHarness(count: 2)
        let data = JournalFixtures.data(10 * 65_536)
        let id = JournalFixtures.id(7)
        try harness.share(data, id: id, on: 0)
        // Node 1 kept chunks 0..<6 from before its restart; chunk 2 has a flipped bit.
        for index in 0..<6 {
            harness.stores[1][id, default: [:]][index] = Array(data[(index * 65_536)..<((index + 1) * 65_536)])
        }
        harness.stores[1][id]![2]![100] ^= 0x04
        harness.connect(0, 1)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 1), data))
        #expect(harness.requests[1][0] == 5, "chunks 2 and 6..<10 only")
        #expect(harness.nodes[1].chunksVerified == 5)
    }

    @Test("REMOVE reaches everyone; a late ANNOUNCE cannot revive it; a late joiner learns the removal")
    func removal() throws {
        var harness = JournalHarness(count: 4)
        harness.connect(0, 1)
        harness.connect(1, 2)
        let data = JournalFixtures.data(3 * 65_536)
        let id = JournalFixtures.id(8)
        let manifest = try harness.share(data, id: id, on: 0)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data))
        try harness.nodes[2].remove(id, now: harness.now)
        harness.pump()
        for index in 0..<3 {
            #expect(harness.nodes[index].manifests.isEmpty, "node \(index)")
            #expect(harness.stores[index][id] == nil)
            #expect(harness.events[index].last == .removed(id))
        }
        // A peer that missed everything announces it again: refused, and told about the removal.
        harness.nodes[3].attachments[id] = JournalAttachment(manifest: manifest, status: .complete)
        harness.nodes[3].order.append(id)
        harness.connect(1, 3)
        #expect(harness.nodes[1].manifests.isEmpty)
        #expect(harness.nodes[3].manifests.isEmpty)
        #expect(throws: JournalError.unknownAttachment) { try harness.nodes[0].remove(id, now: harness.now) }
    }

    @Test("Late joiner: told about every attachment on becoming active; the author may leave once others hold it")
    func lateJoinerAndAuthorLeaves() throws {
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        let data = JournalFixtures.data(12 * 65_536 + 3)
        let id = JournalFixtures.id(9)
        try harness.share(data, id: id, on: 0)
        harness.disconnect(0, 1)
        harness.connect(1, 2)
        #expect(JournalFixtures.identical(harness.assembled(id, on: 2), data))
        #expect(harness.requests[2][0] == nil)
    }

    @Test("R6: every journal message delivered twice, the copy late: same attachments, one event each, no violation")
    func duplicatedMessagesAreIdempotent() throws {
        var harness = JournalHarness(count: 3)
        harness.duplicating = true
        harness.connect(0, 1)
        harness.connect(1, 2)
        harness.connect(0, 2)
        let data = JournalFixtures.data(5 * 65_536 + 17)
        let id = JournalFixtures.id(11)
        try harness.share(data, id: id, on: 0)
        for index in 1..<3 {
            #expect(JournalFixtures.identical(harness.assembled(id, on: index), data), "node \(index)")
        }
        for index in 0..<3 {
            let added = harness.events[index].filter { if case .added = $0 { true } else { false } }.count
            let completed = harness.events[index].filter { $0 == .completed(id) }.count
            // The author reports its own addition and completion too: once each, like everyone.
            #expect(added == 1, "node \(index) reported the attachment added \(added) times")
            #expect(completed == 1, "node \(index) completed \(completed) times")
            #expect(harness.nodes[index].manifests.count == 1)
        }
        // REMOVE twice, and the late copies of everything before it: removed once, not revived.
        try harness.nodes[2].remove(id, now: harness.now)
        harness.pump()
        for index in 0..<3 {
            #expect(harness.nodes[index].manifests.isEmpty, "node \(index)")
            #expect(harness.events[index].filter { $0 == .removed(id) }.count == 1, "node \(index)")
        }
        #expect(harness.violations.isEmpty, "\(harness.violations)")
        #expect(harness.copiesDelivered > 20, "only \(harness.copiesDelivered) messages were delivered twice")
    }

    @Test("Hostile input closes the peer: index out of range, HAVE beyond the count, conflicting manifest")
    func hostile() throws {
        var harness = JournalHarness(count: 2)
        harness.connect(0, 1)
        let id = JournalFixtures.id(10)
        try harness.share(JournalFixtures.data(2 * 65_536), id: id, on: 0)
        let from = harness.keys[0]
        var node = harness.nodes[1]
        #expect(throws: JournalError.indexOutOfRange(index: 2, count: 2)) {
            try node.receive(JournalMessage.chunk(id, index: 2, bytes: []).encoded(), from: from, now: .zero)
        }
        #expect(throws: JournalError.self) {
            try node.receive(JournalMessage.have(id, ranges: [1..<3]).encoded(), from: from, now: .zero)
        }
        #expect(throws: JournalError.self) {
            try node.receive(JournalMessage.chunkRequest(id, index: 5).encoded(), from: from, now: .zero)
        }
        let conflicting = try JournalFixtures.manifest(JournalFixtures.data(5), id: id)
        #expect(throws: JournalError.conflictingManifest) {
            try node.receive(JournalMessage.announce(conflicting).encoded(), from: from, now: .zero)
        }
        // Messages from a peer that is not active are ignored, even garbage.
        try node.receive([1, 2, 3], from: harness.keys[1], now: .zero)
        #expect(node.manifests.count == 1)
    }

    /// The signing key of test author `author`.
    static func authorKey(_ author: Int) throws -> Ed25519PrivateKey {
        try Ed25519PrivateKey(seedBytes: [UInt8](repeating: UInt8(author + 1), count: 32))
    }

    /// An empty attachment `index` of author `author` (a signing key per author).
    static func authored(_ index: Int, by author: Int, size: UInt64 = 0) throws -> AttachmentManifest {
        let id = AttachmentID(
            bytes: [UInt8](repeating: 0, count: 13) + [UInt8(author), UInt8(index >> 8), UInt8(index & 0xFF)])!
        let root = size == 0 ? JournalFixtures.leaves([]).root : [UInt8](repeating: 7, count: 32)
        return try AttachmentManifest(id: id, size: size, root: root, metadata: [], signingKey: try authorKey(author))
    }

    @Test("Limits at the limit: 1,024 attachments then refused and counted; 64 unanswered reads per peer then refused")
    func limits() throws {
        var node = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32)))
        let peer = try X25519PublicKey(bytes: [UInt8](repeating: 2, count: 32))
        node.peerActive(peer, now: .zero)
        let authors = ProtocolLimits.maxJournalAttachments / ProtocolLimits.maxJournalAttachmentsPerAuthor
        for author in 0...authors { node.memberSeen(signingKey: try Self.authorKey(author).publicKey, now: .zero) }
        for author in 0..<authors {
            for index in 0..<ProtocolLimits.maxJournalAttachmentsPerAuthor {
                let manifest = try Self.authored(index, by: author)
                try node.receive(JournalMessage.announce(manifest).encoded(), from: peer, now: .zero)
            }
        }
        #expect(node.manifests.count == 1_024)
        // One more from a new author: the journal is full. Refused and counted, not a violation: the sender may only
        // have forwarded it.
        let extra = try Self.authored(0, by: authors)
        try node.receive(JournalMessage.announce(extra).encoded(), from: peer, now: .zero)
        #expect(node.manifests.count == 1_024)
        #expect(node.announcesRefused == 1)
        #expect(throws: JournalError.limitExceeded(what: "journal attachments", limit: 1_024)) {
            try node.add(extra, leaves: JournalFixtures.leaves([]).leaves, now: .zero)
        }

        var server = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 3, count: 32)))
        server.peerActive(peer, now: .zero)
        let data = JournalFixtures.data(65_536)
        let id = JournalFixtures.id(0xAB)
        try server.add(
            try JournalFixtures.manifest(data, id: id), leaves: JournalFixtures.leaves(data).leaves, now: .zero)
        let request = JournalMessage.chunkRequest(id, index: 0).encoded()
        for _ in 0..<ProtocolLimits.maxPendingServesPerPeer { try server.receive(request, from: peer, now: .zero) }
        #expect(throws: JournalError.limitExceeded(what: "chunk requests pending", limit: 64)) {
            try server.receive(request, from: peer, now: .zero)
        }
        server.chunkRead(id, index: 0, bytes: data, for: peer, now: .zero)
        try server.receive(request, from: peer, now: .zero)
    }

    @Test("A member's attachments beyond 128 wait for its removals; others' still come in; nobody is closed")
    func perAuthorBound() throws {
        var node = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32)))
        let greedy = try X25519PublicKey(bytes: [UInt8](repeating: 2, count: 32))
        let honest = try X25519PublicKey(bytes: [UInt8](repeating: 3, count: 32))
        node.peerActive(greedy, now: .zero)
        node.peerActive(honest, now: .zero)
        for author in 0..<2 { node.memberSeen(signingKey: try Self.authorKey(author).publicKey, now: .zero) }
        let limit = ProtocolLimits.maxJournalAttachmentsPerAuthor
        let waiting = ProtocolLimits.maxDeferredAnnouncesPerAuthor
        // The greedy author announces its limit, then the most that may wait, then 10 more.
        for index in 0..<(limit + waiting + 10) {
            try node.receive(
                JournalMessage.announce(try Self.authored(index, by: 0)).encoded(), from: greedy, now: .zero)
        }
        #expect(node.manifests.count == limit)
        #expect(node.deferredAnnounceCount == waiting)
        #expect(node.announcesRefused == 10)
        // Another author is unaffected, whoever forwards its announcements.
        for index in 0..<5 {
            try node.receive(
                JournalMessage.announce(try Self.authored(index, by: 1)).encoded(), from: greedy, now: .zero)
        }
        #expect(node.manifests.count == limit + 5)
        // Nothing waiting was forwarded or reported; one REMOVE of the greedy author's lets the first waiting in.
        let firstWaiting = try Self.authored(limit, by: 0).id
        #expect(!node.manifests.contains { $0.id == firstWaiting })
        try node.receive(JournalMessage.remove(try Self.authored(0, by: 0).id).encoded(), from: honest, now: .zero)
        #expect(node.manifests.contains { $0.id == firstWaiting })
        #expect(node.deferredAnnounceCount == waiting - 1)
        // A REMOVE of an announcement that still waits forgets it (and tombstones it).
        let secondWaiting = try Self.authored(limit + 1, by: 0)
        try node.receive(JournalMessage.remove(secondWaiting.id).encoded(), from: honest, now: .zero)
        #expect(node.deferredAnnounceCount == waiting - 2)
        try node.receive(JournalMessage.remove(try Self.authored(1, by: 0).id).encoded(), from: honest, now: .zero)
        #expect(!node.manifests.contains { $0.id == secondWaiting.id }, "a removed announcement came back")
        #expect(node.manifests.contains { $0.id == (try? Self.authored(limit + 2, by: 0).id) })
        // The author's own node refuses a local add beyond the bound with a typed error.
        var author = JournalState(local: greedy)
        let empty = JournalFixtures.leaves([]).leaves
        for index in 0..<limit { try author.add(try Self.authored(index, by: 0), leaves: empty, now: .zero) }
        #expect(throws: JournalError.limitExceeded(what: "attachments by one author", limit: limit)) {
            try author.add(try Self.authored(limit, by: 0), leaves: empty, now: .zero)
        }
    }

    @Test("Keys never seen as members share one bound: a member signing with fresh keys gets 128 in all")
    func strangersShareABound() throws {
        var node = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32)))
        let peer = try X25519PublicKey(bytes: [UInt8](repeating: 2, count: 32))
        node.peerActive(peer, now: .zero)
        node.memberSeen(signingKey: try Self.authorKey(0).publicKey, now: .zero)
        let limit = ProtocolLimits.maxJournalAttachmentsPerAuthor
        // Authors 1...150 were never members here: one attachment each.
        for author in 1...150 {
            try node.receive(
                JournalMessage.announce(try Self.authored(0, by: author)).encoded(), from: peer, now: .zero)
        }
        #expect(node.manifests.count == limit)
        #expect(node.deferredAnnounceCount == ProtocolLimits.maxDeferredAnnouncesPerAuthor)
        #expect(node.announcesRefused == 150 - limit - ProtocolLimits.maxDeferredAnnouncesPerAuthor)
        // The member's own share is untouched.
        try node.receive(JournalMessage.announce(try Self.authored(0, by: 0)).encoded(), from: peer, now: .zero)
        #expect(node.manifests.count == limit + 1)
        // A waiting stranger turns out to be a member (it is seen joining): its announcement moves to its own share
        // and comes in at once.
        let waitingAuthor = limit + 1
        let waitingID = try Self.authored(0, by: waitingAuthor).id
        #expect(!node.manifests.contains { $0.id == waitingID })
        node.memberSeen(signingKey: try Self.authorKey(waitingAuthor).publicKey, now: .zero)
        #expect(node.manifests.contains { $0.id == waitingID })
        #expect(node.deferredAnnounceCount == ProtocolLimits.maxDeferredAnnouncesPerAuthor - 1)
    }

    @Test("An author's bytes are bounded too: ten 100 MiB attachments, the eleventh waits")
    func perAuthorBytes() throws {
        var node = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32)))
        let peer = try X25519PublicKey(bytes: [UInt8](repeating: 2, count: 32))
        node.peerActive(peer, now: .zero)
        let size = ProtocolLimits.maxAttachmentSize
        let fits = Int(ProtocolLimits.maxJournalBytesPerAuthor / size)
        #expect(fits == 10)
        for index in 0...fits {
            try node.receive(
                JournalMessage.announce(try Self.authored(index, by: 0, size: size)).encoded(), from: peer, now: .zero)
        }
        #expect(node.manifests.count == fits)
        #expect(node.deferredAnnounceCount == 1)
    }

    @Test("An honest author at its bound removes one and adds one: every member converges whatever arrives first")
    func perAuthorReordering() throws {
        // Node 0 is the author; node 1 learns the new ANNOUNCE before the REMOVE (node 2 forwards it first).
        var harness = JournalHarness(count: 3)
        harness.connect(0, 1)
        harness.connect(0, 2)
        harness.connect(1, 2)
        let limit = ProtocolLimits.maxJournalAttachmentsPerAuthor
        for index in 0..<limit {
            let manifest = try Self.authored(index, by: 0)
            try harness.nodes[0].add(manifest, leaves: JournalFixtures.leaves([]).leaves, now: harness.now)
        }
        harness.pump()
        #expect(harness.nodes[1].manifests.count == limit && harness.nodes[2].manifests.count == limit)
        let fresh = try Self.authored(limit, by: 0)
        let old = try Self.authored(0, by: 0).id
        // What node 1 would see if the removal took a slower path: the new announcement first.
        try harness.nodes[1].receive(
            JournalMessage.announce(fresh).encoded(), from: harness.keys[2], now: harness.now)
        #expect(harness.nodes[1].deferredAnnounceCount == 1)
        try harness.nodes[0].remove(old, now: harness.now)
        try harness.nodes[0].add(fresh, leaves: JournalFixtures.leaves([]).leaves, now: harness.now)
        harness.pump()
        for index in 0..<3 {
            let ids = Set(harness.nodes[index].manifests.map(\.id))
            #expect(ids.count == limit && ids.contains(fresh.id) && !ids.contains(old), "node \(index)")
            #expect(harness.nodes[index].deferredAnnounceCount == 0)
        }
        #expect(harness.violations.isEmpty)
    }

    @Test("Tombstones: 1,024 remembered, the oldest forgotten first")
    func tombstones() throws {
        var node = JournalState(local: try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 32)))
        for index in 0...ProtocolLimits.maxJournalTombstones {
            node.remember(
                AttachmentID(bytes: [UInt8](repeating: 0, count: 14) + [UInt8(index >> 8), UInt8(index & 0xFF)])!)
        }
        #expect(node.tombstones.count == ProtocolLimits.maxJournalTombstones)
        #expect(!node.tombstoneSet.contains(AttachmentID(bytes: [UInt8](repeating: 0, count: 16))!))
    }
}
