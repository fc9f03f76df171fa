import Foundation
import Huddle

// The app's own code that the README's example calls (main.swift is the README's Swift blocks, verbatim, and only
// imports Huddle). These are not part of what the README shows; they only give the example something to call.

/// The app's canvas, sent to newcomers.
let canvasState: [Stroke] = []

/// Where the app finds the image it shares.
let imageURL = URL(fileURLWithPath: "photo.jpg")

/// Draws a stroke someone made.
func draw(_ stroke: Stroke, by author: Participant) {
    print("\(author) drew \(stroke.points.count) points")
}

/// Places an image on the canvas.
func place(_ bytes: Data, at location: [Double]) {
    print("\(bytes.count) bytes at \(location)")
}
