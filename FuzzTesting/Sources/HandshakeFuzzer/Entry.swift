import FuzzTargets

/// libFuzzer's entry point: checks one input with `HandshakeTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    HandshakeTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`HandshakeFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`HandshakeFuzzer --write-corpus DIR`).
    @main
    struct HandshakeFuzzerMain {
        static func main() throws { try FuzzReplay.main(HandshakeTarget.self) }
    }
#endif
