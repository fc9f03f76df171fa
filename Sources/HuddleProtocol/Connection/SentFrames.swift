/// What one sent packet carried that matters once it is acknowledged or lost (QUIC's rule: retransmit frames, never
/// packets): the largest number its ACK frame acknowledged, whether it carried MAX_DATA, and its message fragments.
///
/// The tracker keeps one per packet in flight, so the common contents stay off the heap: the ACK, MAX_DATA and up to
/// two fragments (a bulk packet carries one, two where a message ends) are stored inline, and only a packet packed
/// with more small messages spills the rest into an array.
struct SentFrames: Sendable {
    /// The largest packet number acknowledged by the packet's ACK frame, if it carried one (once that packet is
    /// acknowledged, older ranges need not be repeated).
    var ackLargest: UInt64?
    /// Whether the packet carried MAX_DATA (on loss the latest limit is re-sent, not the lost value).
    var carriesMaxData = false
    /// Whether the packet carried CANDIDATES or OBSERVED_ADDRESS (sent again, with the latest values, on loss).
    var carriesAddresses = false
    /// Whether the packet was a path probe (a PATH_CHALLENGE or PATH_RESPONSE alone): its loss says that route did
    /// not answer (often a candidate address nothing reaches), not that the connection's path lost a packet.
    var isValidationProbe = false
    /// How many fragments the packet carried.
    private(set) var fragmentCount = 0
    private var first: FragmentRecord?
    private var second: FragmentRecord?
    /// Fragments after the second, in order.
    private var more: [FragmentRecord] = []

    /// Nothing recorded yet.
    init() {}

    /// Records the next fragment the packet carries.
    mutating func append(_ fragment: FragmentRecord) {
        switch fragmentCount {
        case 0: first = fragment
        case 1: second = fragment
        default: more.append(fragment)
        }
        fragmentCount += 1
    }

    /// The fragment at `index` (`0 ..< fragmentCount`), in the order they were appended.
    func fragment(at index: Int) -> FragmentRecord {
        precondition(index >= 0 && index < fragmentCount, "fragment index \(index) out of 0..<\(fragmentCount)")
        switch index {
        case 0: return first!
        case 1: return second!
        default: return more[index - 2]
        }
    }
}
