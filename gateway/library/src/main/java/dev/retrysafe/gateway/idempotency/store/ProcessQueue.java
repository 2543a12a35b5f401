package dev.retrysafe.gateway.idempotency.store;

import java.time.Duration;
import java.util.function.Function;
import reactor.core.publisher.Mono;

/**
 * The fleet's queue of processes whose end has not been seen yet. A stored 202 enters it in the same atomic step
 * that stores the response; any gateway instance takes the entries that are due, each with a short claim, asks the
 * process's status, and records the end or the next poll. An instance that dies loses nothing: its claims lapse and
 * another instance takes the entries.
 */
public interface ProcessQueue {

    /**
     * Claims up to {@code max} processes whose status poll is due (each for {@code claim}, longer than a poll
     * takes), asks {@code poll} about each, and records the answer: an end starts the route's retention, anything
     * else (still running, no answer) schedules the next poll after twice the last delay, at most {@code maxDelay}.
     * Emits how many processes were claimed.
     */
    Mono<Integer> pollDue(int max, Duration claim, Duration maxDelay, Function<DueProcess, Mono<PollResult>> poll);

    /**
     * Makes sure that every part of the queue holding processes will be looked into, whatever was lost on the way to
     * what says where to look (a write refused while a Redis master was down, or not yet replicated when it failed
     * over), so that no process waits for its record's retention instead of its poll. Emits how many parts had been
     * lost. It reads the whole queue's index (not every record), so the fleet does it once per {@code interval}: the
     * call of an instance that is not the first in the interval does nothing and emits 0.
     */
    Mono<Integer> restoreLostSlots(Duration interval);

    /** A queued process, with what its record says about where to ask. */
    record DueProcess(String scopeHash, String routeId, String processId, String upstream) {
    }

    /** What a status poll found. */
    sealed interface PollResult {
        /** Still running, or the status could not be read: ask again later. */
        record Running() implements PollResult {
        }

        /** The process ended with {@code status}; the key stays bound {@code retention} from now. */
        record Ended(String status, Duration retention) implements PollResult {
        }

        PollResult RUNNING = new Running();
    }
}
