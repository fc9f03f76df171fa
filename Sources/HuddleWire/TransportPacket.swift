/// A received transport packet split into its header and its protected payload, without copying.
///
/// The payload views point into the datagram and are valid only while the datagram's memory is.
public struct TransportPacket {
    /// The decoded 16-byte header.
    public let header: TransportHeader
    /// The 16 header bytes exactly as received: the AEAD associated data.
    public let associatedData: UnsafeRawBufferPointer
    /// The ciphertext of the frames (the bytes between the header and the tag); may be empty.
    public let ciphertext: UnsafeRawBufferPointer
    /// The 16-byte Poly1305 tag at the end of the datagram.
    public let tag: UnsafeRawBufferPointer

    /// Splits a transport datagram.
    ///
    /// Throws ``WireError/lengthOutOfRange(field:value:limit:)`` for a datagram over
    /// ``WireLimits/maxDatagramSize``, ``WireError/truncated(needed:available:)`` for one shorter than
    /// ``TransportHeader/minimumPacketLength``, and the errors of ``TransportHeader/init(decoding:)``.
    @inlinable
    public init(decoding datagram: UnsafeRawBufferPointer) throws(WireError) {
        guard datagram.count <= WireLimits.maxDatagramSize else {
            throw .lengthOutOfRange(
                field: .datagram, value: UInt64(datagram.count), limit: UInt64(WireLimits.maxDatagramSize))
        }
        guard datagram.count >= TransportHeader.minimumPacketLength else {
            throw .truncated(needed: TransportHeader.minimumPacketLength, available: datagram.count)
        }
        header = try TransportHeader(decoding: datagram)
        let headerEnd = TransportHeader.encodedLength
        let tagStart = datagram.count - TransportHeader.tagLength
        associatedData = UnsafeRawBufferPointer(rebasing: datagram[0..<headerEnd])
        ciphertext = UnsafeRawBufferPointer(rebasing: datagram[headerEnd..<tagStart])
        tag = UnsafeRawBufferPointer(rebasing: datagram[tagStart...])
    }
}
