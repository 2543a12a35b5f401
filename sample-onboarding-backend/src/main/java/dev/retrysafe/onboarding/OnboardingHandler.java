package dev.retrysafe.onboarding;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

import reactor.core.publisher.Mono;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.ServerWebInputException;

/** The HTTP side of the backend; the routes are in {@link OnboardingBackendApplication#onboardingRoutes}. */
class OnboardingHandler {

    /** A JSON error body, for 400, 401 and 404. */
    record ApiError(String error, String message) {
    }

    private final OnboardingLedger ledger;

    private final String retryAfterSeconds;

    private final WriteLog writeLog;

    private final byte[] lookupAuthorization;

    OnboardingHandler(OnboardingLedger ledger, OnboardingProperties properties, WriteLog writeLog) {
        this.ledger = ledger;
        this.writeLog = writeLog;
        if (properties.lookupToken().isBlank()) {
            throw new IllegalArgumentException("onboarding.lookup-token (ONBOARDING_LOOKUP_TOKEN) must not be empty: "
                    + "an empty token would let any 'Authorization: Bearer ' look writes up");
        }
        this.lookupAuthorization = ("Bearer " + properties.lookupToken()).getBytes(StandardCharsets.UTF_8);
        this.retryAfterSeconds = Long.toString(properties.retryAfter().toSeconds());
    }

    Mono<ServerResponse> create(ServerRequest request) {
        return accept(request, null);
    }

    /**
     * An update of an unknown merchant is still answered 202; its process then ends FAILED with a reason, because
     * this backend only looks merchants up when it processes a write.
     */
    Mono<ServerResponse> update(ServerRequest request) {
        return accept(request, request.pathVariable("merchantId"));
    }

    private Mono<ServerResponse> accept(ServerRequest request, String merchantId) {
        ledger.countWriteRequest();
        return request.bodyToMono(MerchantDraft.class)
                .map(draft -> ledger.accept(merchantId, draft, request.headers().firstHeader("Idempotency-Key")))
                .doOnNext(process -> writeLog.accepted(request.method().name(), request.path(),
                        request.headers().firstHeader("Idempotency-Key"), process.processId()))
                .flatMap(process -> ServerResponse.accepted()
                        .location(URI.create("/processes/" + process.processId()))
                        .header(HttpHeaders.RETRY_AFTER, retryAfterSeconds)
                        .contentType(MediaType.APPLICATION_JSON)
                        .bodyValue(process))
                .switchIfEmpty(Mono.defer(() -> error(HttpStatus.BAD_REQUEST, "invalid_request",
                        "a merchant JSON body is required")))
                // Unreadable JSON is refused at once: no process is opened for it.
                .onErrorResume(ServerWebInputException.class, e -> error(HttpStatus.BAD_REQUEST, "invalid_json",
                        "the request body is not a valid merchant JSON object"));
    }

    Mono<ServerResponse> process(ServerRequest request) {
        String processId = request.pathVariable("processId");
        return ledger.process(processId)
                .map(process -> {
                    ServerResponse.BodyBuilder ok = ServerResponse.ok().contentType(MediaType.APPLICATION_JSON);
                    if (process.status() == OnboardingProcess.Status.PENDING) {
                        ok.header(HttpHeaders.RETRY_AFTER, retryAfterSeconds);
                    }
                    return ok.bodyValue(process);
                })
                .orElseGet(() -> error(HttpStatus.NOT_FOUND, "not_found", "no process " + processId));
    }

    Mono<ServerResponse> merchant(ServerRequest request) {
        String merchantId = request.pathVariable("merchantId");
        return ledger.merchant(merchantId)
                .map(merchant -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(merchant))
                .orElseGet(() -> error(HttpStatus.NOT_FOUND, "not_found", "no merchant " + merchantId));
    }

    /**
     * What a sender that lost the answer to a write asks: did this backend receive the write sent with this key?
     * 200 with its process (the 202's body, its status as it stands now), or 404: never received.
     */
    Mono<ServerResponse> processByIdempotencyKey(ServerRequest request) {
        if (!bearsTheLookupToken(request)) {
            return ServerResponse.status(HttpStatus.UNAUTHORIZED).header(HttpHeaders.WWW_AUTHENTICATE, "Bearer")
                    .contentType(MediaType.APPLICATION_JSON)
                    .bodyValue(new ApiError("unauthorized", "this lookup needs Authorization: Bearer <lookup token>"));
        }
        return ledger.processByIdempotencyKey(request.pathVariable("key"))
                .map(process -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(process))
                .orElseGet(() -> error(HttpStatus.NOT_FOUND, "not_found", "no write with this idempotency key"));
    }

    /** Exactly one Authorization header with the lookup token, compared in constant time. */
    private boolean bearsTheLookupToken(ServerRequest request) {
        var sent = request.headers().header(HttpHeaders.AUTHORIZATION);
        return sent.size() == 1
                && MessageDigest.isEqual(sent.get(0).getBytes(StandardCharsets.UTF_8), lookupAuthorization);
    }

    /** A merchant by its business reference, once its create has been processed. */
    Mono<ServerResponse> merchantByTaxId(ServerRequest request) {
        return ledger.merchantByTaxId(request.pathVariable("taxId"))
                .map(merchant -> ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(merchant))
                .orElseGet(() -> error(HttpStatus.NOT_FOUND, "not_found", "no merchant with this tax id"));
    }

    Mono<ServerResponse> stats(ServerRequest request) {
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(ledger.stats());
    }

    private static Mono<ServerResponse> error(HttpStatus status, String error, String message) {
        return ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON)
                .bodyValue(new ApiError(error, message));
    }
}
