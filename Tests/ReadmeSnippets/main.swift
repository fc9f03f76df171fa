import Huddle

struct DrawTogether: GroupActivity {
    var canvas: String
    var metadata: GroupActivityMetadata { GroupActivityMetadata(title: "Draw: \(canvas)", type: .createTogether) }
}
struct Stroke: Codable, Sendable { var points: [Double] }

var random = SystemRandomGenerator()
let identity = Identity(using: &random)  // to keep one across runs: IdentityFile.write(_:to:) and read(from:)
let node = try await HuddleNode.start(.init(identity: identity, name: "ana"))
let session = try await node.activate(DrawTogether(canvas: "sketch"))
try await session.join()
print(try await session.makeInvitation().ticket)  // hand it to a friend

let messenger = Messenger(session: session)  // .reliable by default
Task(executorPreference: node.taskExecutor) {  // runs on the node's network thread: no thread switch per message
    for await (stroke, context) in messenger.messages(of: Stroke.self) { draw(stroke, by: context.source) }
}
Task {  // late-joiner catch-up, as in Apple's DrawTogether sample
    for await change in session.participantChanges {
        if case .joined(let newcomer) = change { try await messenger.send(canvasState, to: .only([newcomer])) }
    }
}
Task {  // .reliable: each participant active at send time gets it once, in order, or it is reported here
    for await failure in session.deliveryFailures { print(failure) }  // participant, count, reason
}
try await messenger.send(Stroke(points: [0, 1, 2]))

// Elsewhere: let session = try await node.join(try Invitation(parsing: ticket), as: DrawTogether.self)
// (session.isLocallyInitiated is false there.) Changing the activity: `session.activity = ...` applies changes in
// order and reports failures on session.activityErrors; `try await session.setActivity(...)` throws them.

// Attachments (Apple's GroupSessionJournal): every member gets them, late joiners too, without a re-upload.
struct ImageInfo: Codable, Sendable { var location: [Double] }
let journal = Journal(session: session)
let attachment = try await journal.add(contentsOf: imageURL, metadata: ImageInfo(location: [10, 20]))  // <= 100 MiB
Task {
    for await attachments in journal.attachments {  // the whole list after every change
        for attachment in attachments {
            let info = try attachment.loadMetadata(of: ImageInfo.self)
            let bytes = try await attachment.load()  // waits until every chunk is verified
            place(bytes, at: info.location)
        }
    }
}
