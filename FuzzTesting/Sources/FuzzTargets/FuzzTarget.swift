import Foundation

/// One parser of untrusted bytes under fuzzing: ``run(_:)`` decodes an input and checks what the decoder promises
/// (no crash, a typed error, and a re-encoding that decodes to the same value); ``seeds()`` are valid encodings for
/// the starting corpus.
public protocol FuzzTarget {
    /// The target's name: its corpus and fail-case folders are `Corpus/<name>` and `FailCases/<name>`.
    static var name: String { get }
    /// Checks one input; a broken promise is a `precondition` failure (a crash the fuzzer records).
    static func run(_ input: UnsafeRawBufferPointer)
    /// Valid inputs to start from.
    static func seeds() throws -> [(name: String, bytes: [UInt8])]
}

/// The normal (non-fuzzing) build's `main` for a target: replays files, or writes the seed corpus.
public enum FuzzReplay {
    /// `TARGET FILE_OR_DIR...` replays every file (directories non-recursively, `*.md` skipped);
    /// `TARGET --write-corpus DIR` writes the seeds.
    public static func main<Target: FuzzTarget>(_ target: Target.Type) throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--write-corpus", arguments.count == 2 {
            let directory = URL(fileURLWithPath: arguments[1])
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let seeds = try Target.seeds()
            for (name, bytes) in seeds { try Data(bytes).write(to: directory.appendingPathComponent(name + ".bin")) }
            print("wrote \(seeds.count) seed inputs to \(arguments[1])")
            return
        }
        guard !arguments.isEmpty else {
            print("usage: \(Target.name) FILE_OR_DIR... | \(Target.name) --write-corpus DIR")
            exit(2)
        }
        var files: [URL] = []
        while let path = arguments.popLast() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                print("no such file: \(path)")
                exit(2)
            }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path)
                    .filter { !$0.hasSuffix(".md") && !$0.hasPrefix(".") }
                    .map { URL(fileURLWithPath: path).appendingPathComponent($0) }
            } else {
                files.append(URL(fileURLWithPath: path))
            }
        }
        for file in files.sorted(by: { $0.path < $1.path }) {
            let bytes = [UInt8](try Data(contentsOf: file))
            bytes.withUnsafeBytes { Target.run($0) }
        }
        print("replayed \(files.count) inputs through \(Target.name)")
    }
}
