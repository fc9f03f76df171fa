import FuzzTargets

/// libFuzzer's entry point: checks one input with `NearbyBeaconTarget`.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    NearbyBeaconTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
    /// The normal build replays inputs (`NearbyBeaconFuzzer FILE_OR_DIR...`) or writes the seed corpus
    /// (`NearbyBeaconFuzzer --write-corpus DIR`).
    @main
    struct NearbyBeaconFuzzerMain {
        static func main() throws { try FuzzReplay.main(NearbyBeaconTarget.self) }
    }
#endif
