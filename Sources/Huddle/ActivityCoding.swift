import Foundation

/// How an activity travels in the session's activity register: JSON `{"identifier": ..., "activity": ...}`, so a
/// member can check the kind before decoding the value.
enum ActivityCoding {
    private struct Envelope<Activity: Codable>: Codable {
        var identifier: String
        var activity: Activity
    }

    private struct Kind: Decodable {
        var identifier: String
    }

    static func encode<Activity: GroupActivity>(_ activity: Activity) throws(HuddleError) -> [UInt8] {
        do {
            return Array(
                try JSONEncoder().encode(Envelope(identifier: Activity.activityIdentifier, activity: activity)))
        } catch {
            throw .coding(CodingFailure(.encoding, Activity.self, error))
        }
    }

    static func identifier(of payload: [UInt8]) -> String? {
        try? JSONDecoder().decode(Kind.self, from: Data(payload)).identifier
    }

    static func decode<Activity: GroupActivity>(
        _ payload: [UInt8], as type: Activity.Type
    ) throws(HuddleError)
        -> Activity
    {
        do {
            let envelope = try JSONDecoder().decode(Envelope<Activity>.self, from: Data(payload))
            guard envelope.identifier == Activity.activityIdentifier else {
                throw HuddleError.activityMismatch(expected: Activity.activityIdentifier, found: envelope.identifier)
            }
            return envelope.activity
        } catch let error as HuddleError {
            throw error
        } catch {
            throw .coding(CodingFailure(.decoding, Activity.self, error))
        }
    }
}
