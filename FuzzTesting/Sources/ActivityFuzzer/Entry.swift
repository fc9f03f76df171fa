import FuzzTargets

/// libFuzzer's entry point: checks one input with `ActivityTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ActivityTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`ActivityFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`ActivityFuzzer --write-corpus DIR`).
    @main
    struct ActivityFuzzerMain {
        static func main() throws { try FuzzReplay.main(ActivityTarget.self) }
    }
#endif
