/// Cheap pre-crypto triage of received datagrams.
///
/// Classification looks only at the datagram's size, its first byte and its reserved bytes: no
/// allocation, no cryptography. Anything it rejects is to be dropped silently. A datagram it accepts
/// has exactly the right length for its type (or, for transport data, at least a header and a tag),
/// so the typed decoders that follow cannot fail on length.
public enum PacketClassifier {
    /// Returns the type of `datagram` after checking its size, type byte, length and reserved bytes.
    ///
    /// Checks, in order:
    /// 1. `datagram.count <= maxDatagramSize` (else ``WireError/lengthOutOfRange(field:value:limit:)``
    ///    with field ``WireField/datagram``);
    /// 2. the first byte is a known ``PacketType`` (else ``WireError/unknownPacketType(_:)``, or
    ///    ``WireError/truncated(needed:available:)`` for an empty datagram);
    /// 3. the length is exact for handshake types (``WireError/truncated(needed:available:)`` when short,
    ///    ``WireError/trailingBytes(count:)`` when long) or at least 32 bytes for transport data;
    /// 4. the reserved bytes (1-3 for handshake types, 2-3 for transport data) are zero (else
    ///    ``WireError/nonZeroReserved(offset:)``).
    ///
    /// - Parameters:
    ///   - datagram: The received UDP payload.
    ///   - maxDatagramSize: The largest acceptable datagram; at most ``WireLimits/maxDatagramSize``.
    public static func classify(
        _ datagram: UnsafeRawBufferPointer,
        maxDatagramSize: Int = WireLimits.maxDatagramSize
    ) throws(WireError) -> PacketType {
        let limit = Swift.min(maxDatagramSize, WireLimits.maxDatagramSize)
        guard datagram.count <= limit else {
            throw .lengthOutOfRange(field: .datagram, value: UInt64(datagram.count), limit: UInt64(limit))
        }
        guard let first = datagram.first else {
            throw .truncated(needed: 1, available: 0)
        }
        guard let type = PacketType(rawValue: first) else {
            throw .unknownPacketType(first)
        }
        if let exact = type.fixedLength {
            guard datagram.count >= exact else {
                throw .truncated(needed: exact, available: datagram.count)
            }
            guard datagram.count == exact else {
                throw .trailingBytes(count: datagram.count - exact)
            }
            for offset in 1...3 where datagram[offset] != 0 {
                throw .nonZeroReserved(offset: offset)
            }
        } else if type == .relaySend || type == .relayDeliver {
            guard datagram.count >= RelayEnvelope.minimumLength else {
                throw .truncated(needed: RelayEnvelope.minimumLength, available: datagram.count)
            }
            for offset in 1...3 where datagram[offset] != 0 {
                throw .nonZeroReserved(offset: offset)
            }
        } else {
            guard datagram.count >= TransportHeader.minimumPacketLength else {
                throw .truncated(needed: TransportHeader.minimumPacketLength, available: datagram.count)
            }
            for offset in 2...3 where datagram[offset] != 0 {
                throw .nonZeroReserved(offset: offset)
            }
        }
        return type
    }

    /// Returns the type of `datagram`; see ``classify(_:maxDatagramSize:)-(UnsafeRawBufferPointer,_)``.
    public static func classify(
        _ datagram: [UInt8],
        maxDatagramSize: Int = WireLimits.maxDatagramSize
    ) throws(WireError) -> PacketType {
        let result: Result<PacketType, WireError> = datagram.withUnsafeBytes { raw in
            Result { () throws(WireError) in try classify(raw, maxDatagramSize: maxDatagramSize) }
        }
        return try result.get()
    }
}
