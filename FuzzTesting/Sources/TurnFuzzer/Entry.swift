import FuzzTargets

/// libFuzzer's entry point: checks one input with `TurnTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    TurnTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`TurnFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`TurnFuzzer --write-corpus DIR`).
    @main
    struct TurnFuzzerMain {
        static func main() throws { try FuzzReplay.main(TurnTarget.self) }
    }
#endif
