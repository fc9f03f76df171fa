import FuzzTargets

/// libFuzzer's entry point: checks one input with `TicketTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    TicketTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`TicketFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`TicketFuzzer --write-corpus DIR`).
    @main
    struct TicketFuzzerMain {
        static func main() throws { try FuzzReplay.main(TicketTarget.self) }
    }
#endif
