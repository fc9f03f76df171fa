import FuzzTargets

/// libFuzzer's entry point: checks one input with `IdentityFileTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    IdentityFileTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`IdentityFileFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`IdentityFileFuzzer --write-corpus DIR`).
    @main
    struct IdentityFileFuzzerMain {
        static func main() throws { try FuzzReplay.main(IdentityFileTarget.self) }
    }
#endif
