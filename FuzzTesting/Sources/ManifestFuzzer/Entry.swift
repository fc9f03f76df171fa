import FuzzTargets

/// libFuzzer's entry point: checks one input with `ManifestTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ManifestTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`ManifestFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`ManifestFuzzer --write-corpus DIR`).
    @main
    struct ManifestFuzzerMain {
        static func main() throws { try FuzzReplay.main(ManifestTarget.self) }
    }
#endif
