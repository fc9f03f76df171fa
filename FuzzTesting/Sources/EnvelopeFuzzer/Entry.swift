import FuzzTargets

/// libFuzzer's entry point: checks one input with `EnvelopeTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    EnvelopeTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`EnvelopeFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`EnvelopeFuzzer --write-corpus DIR`).
    @main
    struct EnvelopeFuzzerMain {
        static func main() throws { try FuzzReplay.main(EnvelopeTarget.self) }
    }
#endif
