package dev.retrysafe.onboarding;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.springframework.beans.factory.DisposableBean;

/**
 * What this backend acted on, one line per accepted write, for runs that check afterwards what a gateway let
 * through (load-tests/rolling-restart.sh): {@code <epoch ms> TAB <method> TAB <path> TAB <Idempotency-Key or ->
 * TAB <processId>}. Off unless {@code onboarding.write-log} names a file; appended to, flushed line by line so that
 * the file holds every write even if this process is killed.
 */
public class WriteLog implements DisposableBean {

    private final BufferedWriter out;

    WriteLog(OnboardingProperties properties) {
        this.out = properties.writeLog().isBlank() ? null : open(Path.of(properties.writeLog()));
    }

    private static BufferedWriter open(Path file) {
        try {
            if (file.toAbsolutePath().getParent() != null) {
                Files.createDirectories(file.toAbsolutePath().getParent());
            }
            return Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot open onboarding.write-log " + file, e);
        }
    }

    void accepted(String method, String path, String idempotencyKey, String processId) {
        if (out == null) {
            return;
        }
        String line = System.currentTimeMillis() + "\t" + method + "\t" + field(path) + "\t"
                + (idempotencyKey == null ? "-" : field(idempotencyKey)) + "\t" + processId + "\n";
        synchronized (this) {
            try {
                out.write(line);
                out.flush();
            }
            catch (IOException e) {
                throw new UncheckedIOException("cannot append to onboarding.write-log", e);
            }
        }
    }

    /** Whatever a client sent directly to the backend stays on its one line and in its one column. */
    private static String field(String text) {
        StringBuilder safe = new StringBuilder(text.length());
        text.codePoints().forEach(c -> safe.appendCodePoint(Character.isISOControl(c) ? '?' : c));
        return safe.isEmpty() ? "-" : safe.toString();
    }

    @Override
    public synchronized void destroy() throws IOException {
        if (out != null) {
            out.close();
        }
    }
}
