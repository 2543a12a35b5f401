package dev.retrysafe.loadtests.gatling;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A load balancer as simple as a load test needs: each request goes to the next gateway instance in turn (round
 * robin per request, not per virtual user), over the instances in service. Which ones are in service is read from
 * an optional file, one base URL per line, re-read at most every {@link #RECHECK_NANOS}: a rolling restart takes an
 * instance out of the file, waits for its requests to end, restarts it and puts it back, as a Kubernetes Service
 * does with a pod that is not ready. Without a file, or when the file names none of the instances (missing, empty),
 * every instance is in service.
 */
public final class Rotation {

    static final long RECHECK_NANOS = 50_000_000L;

    private final List<String> instances;
    private final Path inServiceFile;
    private final LongSupplier nanoTime;
    private final AtomicLong turn = new AtomicLong();
    private volatile List<String> inService;
    private volatile long checkedAt;

    Rotation(List<String> instances, Path inServiceFile, LongSupplier nanoTime) {
        if (instances.isEmpty()) {
            throw new IllegalArgumentException("a rotation needs at least one base URL");
        }
        this.instances = instances.stream().map(Rotation::normalized).toList();
        this.inServiceFile = inServiceFile;
        this.nanoTime = nanoTime;
        this.inService = this.instances;
        this.checkedAt = nanoTime.getAsLong() - RECHECK_NANOS;
    }

    public static Rotation of(List<String> instances, Path inServiceFile) {
        return new Rotation(instances, inServiceFile, System::nanoTime);
    }

    public List<String> instances() {
        return instances;
    }

    /** The base URL the next request goes to. */
    public String next() {
        List<String> current = current();
        return current.get((int) Math.floorMod(turn.getAndIncrement(), (long) current.size()));
    }

    private List<String> current() {
        if (inServiceFile != null && nanoTime.getAsLong() - checkedAt >= RECHECK_NANOS) {
            // One reader at a time: a slow read of the old file must not overwrite a newer read's list.
            synchronized (this) {
                if (nanoTime.getAsLong() - checkedAt >= RECHECK_NANOS) {
                    inService = readInService();
                    checkedAt = nanoTime.getAsLong();
                }
            }
        }
        return inService;
    }

    private List<String> readInService() {
        List<String> listed;
        try {
            listed = Files.readAllLines(inServiceFile);
        }
        catch (NoSuchFileException e) {
            return instances;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot read the rotation file " + inServiceFile, e);
        }
        List<String> named = new ArrayList<>();
        for (String instance : instances) {
            if (listed.stream().map(String::trim).filter(line -> !line.isEmpty()).map(Rotation::normalized)
                    .anyMatch(instance::equals)) {
                named.add(instance);
            }
        }
        return named.isEmpty() ? instances : List.copyOf(named);
    }

    private static String normalized(String url) {
        String trimmed = url.trim();
        return trimmed.endsWith("/") ? trimmed.substring(0, trimmed.length() - 1) : trimmed;
    }
}
