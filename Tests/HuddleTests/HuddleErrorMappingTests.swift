import HuddleProtocol
import HuddleSession
import Testing

@testable import Huddle

@Suite("Errors the application gets for the core's refusals")
struct HuddleErrorMappingTests {
    @Test("A refused add names the bound it met: the journal's size, or this author's share (count or bytes)")
    func journalLimits() {
        let full = HuddleError(JournalError.limitExceeded(what: JournalError.journalAttachments, limit: 1_024))
        guard case .journalFull(let limit) = full else {
            Issue.record("\(full)")
            return
        }
        #expect(limit == 1_024)
        let bounds: [(String, Journal.AuthorBound, Int)] = [
            (JournalError.attachmentsByOneAuthor, .attachments, 128), (JournalError.bytesByOneAuthor, .bytes, 1 << 30),
        ]
        for (what, expected, limit) in bounds {
            let error = HuddleError(JournalError.limitExceeded(what: what, limit: limit))
            guard case .authorShareFull(let named, let bound) = error else {
                Issue.record("\(error)")
                continue
            }
            #expect(named == expected && bound == limit)
            #expect(error.description.contains("\(expected)"), "\(error)")
        }
    }
}
