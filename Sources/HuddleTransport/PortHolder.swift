#if canImport(Glibc)
    @preconcurrency import Glibc
#endif

/// Who holds a UDP port, for an error message a person can act on: "huddle (pid 4242)".
///
/// On Linux it reads the kernel's socket tables (`/proc/net/udp`, `/proc/net/udp6`) for a socket bound to the port,
/// then the processes' descriptor links (`/proc/PID/fd/*` → `socket:[INODE]`) for the one that has it open. Another
/// user's processes are visible only to root; the answer is then `nil` and the message just says the port is taken.
enum PortHolder {
    /// The process holding UDP port `port` (name and pid), or `nil` when it cannot be told.
    static func describe(port: Int) -> String? {
        #if os(Linux)
            let inodes = socketInodes(port: port)
            guard !inodes.isEmpty, let directory = opendir("/proc") else { return nil }
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard let pid = Int(name) else { continue }
                if holds(pid: pid, inodes) {
                    let command =
                        read("/proc/\(pid)/comm")?.split(separator: "\n").first.map(String.init) ?? "a process"
                    return "\(command) (pid \(pid))"
                }
            }
            return nil
        #else
            return nil
        #endif
    }

    #if os(Linux)
        /// The inodes of the UDP sockets bound to `port`, from the kernel's IPv4 and IPv6 tables.
        static func socketInodes(port: Int) -> Set<String> {
            var inodes: Set<String> = []
            for table in ["/proc/net/udp", "/proc/net/udp6"] {
                guard let text = read(table) else { continue }
                for line in text.split(separator: "\n").dropFirst() {
                    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
                    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                    guard fields.count > 9, let colon = fields[1].lastIndex(of: ":"),
                        let local = Int(fields[1][fields[1].index(after: colon)...], radix: 16), local == port
                    else { continue }
                    inodes.insert(String(fields[9]))
                }
            }
            return inodes
        }

        /// Whether process `pid` has one of the sockets `inodes` open.
        static func holds(pid: Int, _ inodes: Set<String>) -> Bool {
            guard let directory = opendir("/proc/\(pid)/fd") else { return false }
            defer { closedir(directory) }
            var target = [CChar](repeating: 0, count: 64)
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
                }
                guard Int(name) != nil else { continue }
                let count = readlink("/proc/\(pid)/fd/\(name)", &target, target.count - 1)
                guard count > 0 else { continue }
                let link = String(decoding: target[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if link.hasPrefix("socket:["), inodes.contains(String(link.dropFirst(8).dropLast())) { return true }
            }
            return false
        }

        /// A small file's contents (proc files report size 0, so it reads until the end).
        static func read(_ path: String) -> String? {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            defer { close(descriptor) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                bytes += buffer[0..<count]
                // The socket tables of a busy host stay small; a bound keeps a hostile /proc from costing much.
                if bytes.count > 8 << 20 { break }
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    #endif
}
