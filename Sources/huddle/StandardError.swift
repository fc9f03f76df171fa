#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Writes diagnostics to standard error, leaving standard output to results and events.
enum StandardError {
    static func write(_ line: String, newline: Bool = true) {
        fputs(newline ? line + "\n" : line, stderr)
        if !newline { fflush(stderr) }
    }
}
