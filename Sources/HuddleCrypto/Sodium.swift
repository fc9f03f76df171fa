import CSodium

/// The one piece of process-wide state HuddleCrypto keeps: libsodium's own initialisation.
///
/// `sodium_init()` is idempotent and thread-safe; Swift runs a global's initialiser exactly once, so every entry
/// point that touches libsodium reads ``Sodium/ready`` first and the library is initialised before first use.
@usableFromInline
enum Sodium {
    /// Initialises libsodium on first access. Traps if libsodium cannot initialise, because nothing in this module
    /// is safe to run without it.
    private static let ready: Void = {
        guard sodium_init() >= 0 else {
            fatalError("libsodium failed to initialise (sodium_init returned -1)")
        }
    }()

    /// Traps unless a libsodium call returned 0. Used for calls whose inputs were already validated, where a
    /// failure would mean a broken invariant; calls that can legitimately fail (verification, decryption) are
    /// checked by their callers instead.
    @usableFromInline
    static func check(_ status: Int32, _ function: StaticString) {
        precondition(status == 0, "\(function) failed")
    }

    /// Ensures libsodium is initialised; cheap after the first call.
    @usableFromInline
    static func initialize() { ready }
}
