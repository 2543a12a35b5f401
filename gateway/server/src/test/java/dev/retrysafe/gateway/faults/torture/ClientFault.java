package dev.retrysafe.gateway.faults.torture;

/** What a client does wrong on purpose during one exchange; the name is how {@code -Dtorture.faults} picks it. */
enum ClientFault {
    CLEAN("clean", false),
    HANGUP_BEFORE_LAST_BYTE("hangup-before-last-byte", false),
    HANGUP_AT_LAST_BYTE("hangup-at-last-byte", false),
    HANGUP_AFTER_LAST_BYTE("hangup-after-last-byte", false),
    HANGUP_AFTER_FIRST_RESPONSE_BYTE("hangup-after-first-response-byte", false),
    BAD_CHUNK_SIZE("bad-chunk-size", true),
    LF_ONLY_CHUNK_LINES("lf-only-chunk-lines", true),
    CHUNK_LONGER_THAN_DECLARED("chunk-longer-than-declared", true),
    BAD_TRAILER("bad-trailer", true),
    BAD_TRANSFER_ENCODING("bad-transfer-encoding", true),
    SLOW_BODY("slow-body", false),
    DUPLICATES_SAME_BODY("duplicates-same-body", false),
    DUPLICATES_DIFFERENT_BODIES("duplicates-different-bodies", false),
    /** No Idempotency-Key (the exchange is named in {@code X-Torture-Exchange}): refused, never forwarded. */
    MISSING_KEY("missing-key", false);

    final String label;
    /** The request is malformed: it must be refused (400 or a closed connection), never forwarded or reserved. */
    final boolean malformed;

    ClientFault(String label, boolean malformed) {
        this.label = label;
        this.malformed = malformed;
    }
}
