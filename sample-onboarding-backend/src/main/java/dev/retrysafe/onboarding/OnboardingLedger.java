package dev.retrysafe.onboarding;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

import org.springframework.beans.factory.DisposableBean;

/**
 * The backend's books: merchants, processes and the counters that show what a gateway let through.
 * Everything is in memory; a write is answered at once and applied after {@code onboarding.processing-delay}.
 *
 * <p>In-JVM tests read {@link #merchantsCreated()}, {@link #merchantsUpdated()} and {@link #writeRequests()}
 * from the bean of this type in the context that {@link OnboardingBackendApplication#start} returns.
 */
public class OnboardingLedger implements DisposableBean {

    /** What {@code GET /stats} shows. */
    public record Stats(long merchantsCreated, long merchantsUpdated, long writeRequests) {
    }

    private final Duration processingDelay;

    private final Map<String, Merchant> merchants = new ConcurrentHashMap<>();

    private final Map<String, OnboardingProcess> processes = new ConcurrentHashMap<>();

    /** The process each write opened, by the Idempotency-Key it was sent with (as a gateway forwards it). */
    private final Map<String, String> processByKey = new ConcurrentHashMap<>();

    private final AtomicLong merchantsCreated = new AtomicLong();

    private final AtomicLong merchantsUpdated = new AtomicLong();

    private final AtomicLong writeRequests = new AtomicLong();

    /** Completes when the context closes, so that writes still pending are dropped rather than applied late. */
    private final Sinks.Empty<Void> closed = Sinks.empty();

    OnboardingLedger(OnboardingProperties properties) {
        this.processingDelay = properties.processingDelay();
    }

    /** Merchants created by completed POSTs: one per POST, retries included. */
    public long merchantsCreated() {
        return merchantsCreated.get();
    }

    /** Merchants updated by completed PUTs. */
    public long merchantsUpdated() {
        return merchantsUpdated.get();
    }

    /** Every POST and PUT received, whether or not its body could be read. */
    public long writeRequests() {
        return writeRequests.get();
    }

    public Stats stats() {
        return new Stats(merchantsCreated(), merchantsUpdated(), writeRequests());
    }

    public Optional<Merchant> merchant(String merchantId) {
        return Optional.ofNullable(merchants.get(merchantId));
    }

    public Optional<OnboardingProcess> process(String processId) {
        return Optional.ofNullable(processes.get(processId));
    }

    /** The process of the write sent with this Idempotency-Key, if this backend ever received it. */
    public Optional<OnboardingProcess> processByIdempotencyKey(String key) {
        return Optional.ofNullable(processByKey.get(key)).flatMap(this::process);
    }

    /** The merchant with this tax id, once a write that created it has been processed. */
    public Optional<Merchant> merchantByTaxId(String taxId) {
        return merchants.values().stream().filter(merchant -> taxId.equals(merchant.taxId())).findFirst();
    }

    void countWriteRequest() {
        writeRequests.incrementAndGet();
    }

    /**
     * Opens a PENDING process for a create ({@code merchantId == null}) or an update, remembers it by the request's
     * Idempotency-Key (a reference the sender can look up), and settles it after the processing delay on a Reactor timer (no thread is held while it waits).
     */
    OnboardingProcess accept(String merchantId, MerchantDraft draft, String idempotencyKey) {
        OnboardingProcess pending = OnboardingProcess.pending(UUID.randomUUID().toString());
        processes.put(pending.processId(), pending);
        if (idempotencyKey != null) {
            processByKey.put(idempotencyKey, pending.processId());
        }
        Mono.delay(processingDelay)
                .takeUntilOther(closed.asMono())
                .subscribe(tick -> settle(pending.processId(), merchantId, draft));
        return pending;
    }

    private void settle(String processId, String merchantId, MerchantDraft draft) {
        // Merchant and counters are written before the process turns COMPLETED: whoever sees COMPLETED
        // can read the merchant and the new counts.
        List<String> problems = draft.problems();
        if (!problems.isEmpty()) {
            processes.put(processId, OnboardingProcess.failed(processId, problems));
        }
        else if (merchantId == null) {
            Merchant merchant = Merchant.of(UUID.randomUUID().toString(), draft);
            merchants.put(merchant.id(), merchant);
            merchantsCreated.incrementAndGet();
            processes.put(processId, OnboardingProcess.completed(processId, merchant.id()));
        }
        else if (merchants.computeIfPresent(merchantId, (id, old) -> Merchant.of(id, draft)) != null) {
            merchantsUpdated.incrementAndGet();
            processes.put(processId, OnboardingProcess.completed(processId, merchantId));
        }
        else {
            // Checked here, not at request time: like the rest of the write, the lookup happens in the back office.
            processes.put(processId, OnboardingProcess.failed(processId,
                    List.of("merchant " + merchantId + " does not exist")));
        }
    }

    @Override
    public void destroy() {
        closed.tryEmitEmpty();
    }
}
