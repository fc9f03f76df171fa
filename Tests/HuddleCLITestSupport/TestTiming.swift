import Foundation

/// Wall-clock bounds in tests, stretched where the code runs slower than it does in production: under a sanitizer
/// (`make sanitize` sets `HUDDLE_SANITIZER`), which slows every instruction 2-15x. The assertions stay the same;
/// only how long they may take grows, so the paths these tests cover (a flood, a crash, a refusal) still run under
/// the sanitizer.
public enum TestTiming {
    /// 1 normally, 3 under a sanitizer.
    public static let slowdown: Double = ProcessInfo.processInfo.environment["HUDDLE_SANITIZER"] == nil ? 1 : 3

    /// `bound` stretched by ``slowdown``.
    public static func bound(_ bound: Duration) -> Duration { bound * slowdown }

    /// `seconds` stretched by ``slowdown``.
    public static func seconds(_ seconds: Double) -> Double { seconds * slowdown }
}
