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

    void countWriteRequest() {
        writeRequests.incrementAndGet();
    }

    /**
     * Opens a PENDING process for a create ({@code merchantId == null}) or an update, and settles it after the
     * processing delay on a Reactor timer (no thread is held while it waits).
     */
    OnboardingProcess accept(String merchantId, MerchantDraft draft) {
        OnboardingProcess pending = OnboardingProcess.pending(UUID.randomUUID().toString());
        processes.put(pending.processId(), pending);
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
