import Foundation
import HuddleCrypto

/// Decodes lowercase or uppercase hex; traps on malformed input, which only ever comes from committed vectors.
func hex(_ text: String) -> [UInt8] {
    let scalars = Array(text.utf8)
    precondition(scalars.count % 2 == 0, "odd-length hex")
    return stride(from: 0, to: scalars.count, by: 2).map { index in
        UInt8(String(decoding: scalars[index..<(index + 2)], as: UTF8.self), radix: 16)!
    }
}

/// Lowercase hex of `bytes`.
func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Loads a committed JSON vector file from the test bundle.
func loadVectors(_ name: String) throws -> [String: Any] {
    guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
        throw VectorError.missing(name)
    }
    let data = try Data(contentsOf: url)
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw VectorError.malformed(name)
    }
    return object
}

enum VectorError: Error {
    case missing(String)
    case malformed(String)
}

/// The entries of one family in a vector file, as string dictionaries.
func entries(_ family: String, in file: [String: Any]) -> [[String: Any]] {
    (file[family] as? [[String: Any]]) ?? []
}

extension Dictionary where Key == String, Value == Any {
    func bytes(_ key: String) -> [UInt8] { hex(self[key] as! String) }
    func string(_ key: String) -> String { self[key] as! String }
}
