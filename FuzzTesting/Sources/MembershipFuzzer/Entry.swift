import FuzzTargets

/// libFuzzer's entry point: checks one input with `MembershipTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    MembershipTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`MembershipFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`MembershipFuzzer --write-corpus DIR`).
    @main
    struct MembershipFuzzerMain {
        static func main() throws { try FuzzReplay.main(MembershipTarget.self) }
    }
#endif
