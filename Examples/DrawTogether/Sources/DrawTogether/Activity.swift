import Foundation
import Huddle

/// The activity: what the session is about (Apple's sample calls it `DrawTogether` too).
struct DrawTogether: GroupActivity {
    var metadata: GroupActivityMetadata {
        GroupActivityMetadata(title: "Draw Together", type: .createTogether)
    }
}

/// A point on the canvas, in canvas pixels.
struct Point: Codable, Sendable, Hashable {
    var x: Double
    var y: Double
}

/// One stroke: its points in order, in its author's colour.
struct Stroke: Codable, Sendable, Identifiable {
    var id: UUID
    var color: String
    var points: [Point]
}

/// Messages between participants, as in the WWDC sample: each new point of a stroke is upserted (the stroke is
/// created by its first point), reliably and in order.
struct UpsertStroke: Codable, Sendable {
    var id: UUID
    var color: String
    var point: Point
}

/// The whole canvas for a newcomer (the WWDC sample's `CanvasMessage`): every member sends it to each participant
/// that joins, which merges it with what it already has.
struct CanvasMessage: Codable, Sendable {
    var strokes: [Stroke]
}

/// Where a participant's pointer is: sent unreliably, since only the latest matters.
struct CursorMoved: Codable, Sendable {
    var point: Point
}

/// An image's place on the canvas: the metadata of its journal attachment.
struct ImagePlacement: Codable, Sendable {
    var point: Point
    var mimeType: String
}

extension Participant {
    /// The participant's stroke colour, the same on every member (from its identity).
    var color: String {
        let palette = [
            "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#9a6324", "#800000",
            "#469990", "#000075", "#808000",
        ]
        let hash = id.unicodeScalars.reduce(UInt32(0)) { $0 &* 31 &+ $1.value }
        return palette[Int(hash % UInt32(palette.count))]
    }
}
