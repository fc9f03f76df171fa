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

    /// Ensures libsodium is initialised; cheap after the first call.
    @usableFromInline
    static func initialize() { ready }
}
