import FuzzTargets

/// libFuzzer's entry point: checks one input with `JournalMessageTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    JournalMessageTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`JournalMessageFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`JournalMessageFuzzer --write-corpus DIR`).
    @main
    struct JournalMessageFuzzerMain {
        static func main() throws { try FuzzReplay.main(JournalMessageTarget.self) }
    }
#endif
