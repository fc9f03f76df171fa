#if !FUZZING
    import FuzzTargets

    /// The normal (non-fuzzing) build of `WireFuzzer`: `WireFuzzer FILE_OR_DIR...` replays inputs through
    /// ``WireFuzzTarget`` (a broken promise crashes, exactly as under the fuzzer); `WireFuzzer --write-corpus DIR`
    /// writes the seed corpus.
    @main
    struct WireFuzzerMain {
        static func main() throws { try FuzzReplay.main(WireFuzzTarget.self) }
    }
#endif
