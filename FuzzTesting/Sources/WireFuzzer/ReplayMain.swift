#if !FUZZING
    import Foundation
    import HuddleWire

    /// Normal (non-fuzzing) build of `WireFuzzer`: replays inputs through ``WireFuzzTarget``.
    ///
    /// Usage:
    /// - `WireFuzzer FILE_OR_DIR...` replays every file (directories non-recursively, `*.md` skipped);
    ///   a broken promise crashes, exactly as under the fuzzer.
    /// - `WireFuzzer --write-corpus DIR` writes the seed corpus (valid encodings of every packet and frame).
    @main
    struct WireFuzzerMain {
        static func main() throws {
            var arguments = Array(CommandLine.arguments.dropFirst())
            if arguments.first == "--write-corpus", arguments.count == 2 {
                let count = try CorpusWriter.write(to: URL(fileURLWithPath: arguments[1]))
                print("wrote \(count) seed inputs to \(arguments[1])")
                return
            }
            guard !arguments.isEmpty else {
                print("usage: WireFuzzer FILE_OR_DIR... | WireFuzzer --write-corpus DIR")
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
                    let names = try FileManager.default.contentsOfDirectory(atPath: path)
                    files += names.filter { !$0.hasSuffix(".md") && !$0.hasPrefix(".") }
                        .map { URL(fileURLWithPath: path).appendingPathComponent($0) }
                } else {
                    files.append(URL(fileURLWithPath: path))
                }
            }
            for file in files.sorted(by: { $0.path < $1.path }) {
                let bytes = [UInt8](try Data(contentsOf: file))
                bytes.withUnsafeBytes { WireFuzzTarget.run($0) }
            }
            print("replayed \(files.count) inputs without a crash")
        }
    }
#endif
