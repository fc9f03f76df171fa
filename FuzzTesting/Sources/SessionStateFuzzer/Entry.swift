import FuzzTargets

/// libFuzzer's entry point: plays one input with `SessionStateTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    SessionStateTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`SessionStateFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`SessionStateFuzzer --write-corpus DIR`).
    @main
    struct SessionStateFuzzerMain {
        static func main() throws { try FuzzReplay.main(SessionStateTarget.self) }
    }
#endif
