import FuzzTargets

/// libFuzzer's entry point: checks one input with `HandshakeReplyTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    HandshakeReplyTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`HandshakeReplyFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`HandshakeReplyFuzzer --write-corpus DIR`).
    @main
    struct HandshakeReplyFuzzerMain {
        static func main() throws { try FuzzReplay.main(HandshakeReplyTarget.self) }
    }
#endif
