"""An independent reference implementation of Huddle's wire format, written from docs/PROTOCOL.md
(not from the Swift sources), used to generate docs/vectors/. One import for all of it:

    import huddle_reference as huddle
    huddle.varint(300), huddle.write_message1(...), huddle.encode_ticket(...), huddle.mth(leaves)

The code lives in one module per part of the document:

    ref_wire.py     sections 1-6: integers, varints, addresses, frames, packet layouts, classification
    ref_crypto.py   section 7: Noise IKpsk2 ("huddle/1" prologue), TAI64N, mac1/mac2, cookies, transport AEAD
    ref_session.py  section 8 and Appendix A: crypto_kdf credentials, tickets, member records, control
                    messages, messenger envelopes, the CLI's JSON messages
    ref_journal.py  section 9: leaves, Merkle tree hash, inclusion proofs, manifests, journal messages
    ref_relay.py    section 10: relay key, tokens, RELAY_* packets

Standard library plus PyNaCl (libsodium) only.
"""

from ref_crypto import *   # noqa: F401,F403
from ref_journal import *  # noqa: F401,F403
from ref_relay import *    # noqa: F401,F403
from ref_session import *  # noqa: F401,F403
from ref_wire import *     # noqa: F401,F403
