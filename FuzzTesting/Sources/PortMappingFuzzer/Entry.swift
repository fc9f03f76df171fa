import FuzzTargets

/// libFuzzer's entry point: checks one input with `PortMappingTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    PortMappingTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`PortMappingFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`PortMappingFuzzer --write-corpus DIR`).
    @main
    struct PortMappingFuzzerMain {
        static func main() throws { try FuzzReplay.main(PortMappingTarget.self) }
    }
#endif
