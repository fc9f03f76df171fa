import HuddleWire

/// libFuzzer's entry point: checks one input with ``WireFuzzTarget``.
@_cdecl("LLVMFuzzerTestOneInput")
public func wireFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    WireFuzzTarget.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}
