package dev.retrysafe.gateway.faults.torture;

/** How the recording upstream answers the requests of one key; the name is how {@code -Dtorture.faults} picks it. */
enum UpstreamFault {
    NORMAL("upstream-normal"),
    SLOW("upstream-slow"),
    /** Reads the request, then resets the connection (RST) without a byte of answer. */
    RESET("upstream-reset"),
    /** Reads the request and never answers: the gateway's response timeout ends it. */
    TIMEOUT("upstream-timeout"),
    /** Sends the head and part of the announced body, then hangs up. */
    PARTIAL("upstream-partial"),
    /** Answers 503, a status the gateway releases the key on: the retry may be forwarded again. */
    UNAVAILABLE("upstream-unavailable"),
    /**
     * Reads the request's head, then closes the connection without reading its body or answering: the write did not
     * happen, and the gateway cannot know it. Only the reconciling route's upstream does it ({@link RouteKind}).
     */
    DROP("upstream-drop");

    final String label;

    UpstreamFault(String label) {
        this.label = label;
    }
}
