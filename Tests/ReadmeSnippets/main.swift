import Huddle

struct DrawTogether: GroupActivity {
    static let activityIdentifier = "com.example.draw-together"  // every member must agree on it
    var canvas: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "Draw: \(canvas)", type: .createTogether) }
}
struct Stroke: Codable, Sendable { var points: [Double] }

// Two nodes in one process, each an identity and a UDP socket on 127.0.0.1 (an app starts one, on its device).
var random = SystemRandomGenerator()
let ana = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "ana"))
let ben = try await HuddleNode.start(.init(identity: Identity(using: &random), name: "ben"))

// Ana starts a session; its ticket is the text a friend joins with.
let anaSession = try await ana.activate(DrawTogether(canvas: "sketch"))
try await anaSession.join()
let ticket = try await anaSession.makeInvitation(validFor: .seconds(600)).ticket
print("ana's ticket: \(ticket.prefix(24))... (\(ticket.count) characters)")

// Ana catches each newcomer up with a stroke (as Apple's DrawTogether does) and waits for the reply.
let anaMessenger = Messenger(session: anaSession)  // .reliable by default: once and in order, or reported
let arrivals = anaSession.participantChanges  // subscribed before anyone joins, so no arrival is missed
let anaSide = Task {
    for await case .joined(let newcomer) in arrivals {
        try await anaMessenger.send(Stroke(points: [0, 1, 2]), to: .only([newcomer]))
        for await (reply, context) in anaMessenger.messages(of: Stroke.self) {
            print("ana received \(reply.points) from \(context.source.name)")
            return
        }
    }
}

// Ben joins with the ticket (a Noise IKpsk2 handshake with a member it names), reads the stroke and replies.
let benSession = try await ben.join(try Invitation(parsing: ticket), as: DrawTogether.self)
print("ben joined the canvas \"\(benSession.activity.canvas)\"")
let benMessenger = Messenger(session: benSession)
for await (stroke, context) in benMessenger.messages(of: Stroke.self) {
    print("ben received \(stroke.points) from \(context.source.name)")
    try await benMessenger.send(Stroke(points: [3, 4]), to: .only([context.source]))
    break
}
try await anaSide.value

// Ben leaves: ana sees it at once (a crash would show as .unreachable after the idle timeout). Then ana leaves.
let departures = anaSession.participantChanges
await benSession.leave()
for await case .left(let participant, let reason) in departures {
    print("ana saw \(participant.name) go: \(reason)")
    break
}
await anaSession.leave()
await ben.shutdown()
await ana.shutdown()
