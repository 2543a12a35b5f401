package dev.retrysafe.gateway.idempotency.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retrysafe.gateway.idempotency.record.ResponseHeader;
import dev.retrysafe.gateway.idempotency.record.StoredResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;

class ProcessTrackingTest {
    final ProcessTracking tracking = new ProcessTracking("/processes/{processId}", "/processId", "/status",
            Set.of("COMPLETED", "FAILED"), Duration.ofDays(7));

    @Test
    void aWriteWhoseProcessIsPendingLeavesItUnfinished() {
        assertThat(tracking.unfinishedProcess(null, json("{\"processId\":\"p-1\",\"status\":\"PENDING\"}")))
                .contains("p-1");
    }

    @Test
    void aWriteWhoseBodyAlreadyReportsTheEndLeavesNothingToWaitFor() {
        assertThat(tracking.unfinishedProcess(null, json("{\"processId\":\"p-1\",\"status\":\"COMPLETED\"}")))
                .isEmpty();
    }

    @Test
    void aGzippedWriteIsReadThroughItsEncoding() throws IOException {
        assertThat(tracking.unfinishedProcess("gzip", gzip("{\"processId\":\"p-2\",\"status\":\"PENDING\"}")))
                .contains("p-2");
    }

    @Test
    void noProcessIsReadFromWhatIsNotJsonOrNamesNoUsableId() {
        assertThat(tracking.unfinishedProcess(null, json("<html>accepted</html>"))).isEmpty();
        assertThat(tracking.unfinishedProcess(null, new byte[0])).isEmpty();
        assertThat(tracking.unfinishedProcess(null, json("{\"processId\":\"../../admin\"}"))).isEmpty();
        assertThat(tracking.unfinishedProcess(null, json("{\"processId\":{\"nested\":1}}"))).isEmpty();
    }

    @Test
    void aStatusResponseReportsOnlyTerminalValues() {
        assertThat(tracking.terminalStatus(null, json("{\"status\":\"FAILED\"}"))).contains("FAILED");
        assertThat(tracking.terminalStatus(null, json("{\"status\":\"PENDING\"}"))).isEmpty();
    }

    @Test
    void theStatusPathAndItsProcessIdRoundTrip() {
        assertThat(tracking.statusPath("p-9")).isEqualTo("/processes/p-9");
        assertThat(tracking.processIdInPath("/processes/p-9")).contains("p-9");
        assertThat(tracking.processIdInPath("/processes/p-9/x")).isEmpty();
    }

    @Test
    void aStatusUriWithoutItsPlaceholderIsRefused() {
        assertThatThrownBy(() -> new ProcessTracking("/processes", "/processId", "/status", Set.of("COMPLETED"),
                Duration.ofDays(1))).hasMessageContaining("{processId}");
    }

    private static byte[] json(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] gzip(String text) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gzip = new GZIPOutputStream(out)) {
            gzip.write(json(text));
        }
        return out.toByteArray();
    }

    @Test
    void aWritesAnswerNamesItsProcessOnlyWhenItIsA2xxAndIsReadByItsOwnEncoding() throws IOException {
        byte[] pending = gzip("{\"processId\":\"p-3\",\"status\":\"PENDING\"}");
        List<ResponseHeader> gzipped = List.of(new ResponseHeader("content-encoding", "gzip"));

        assertThat(tracking.unfinishedProcess(gzipped, new StoredResponse(202, List.of(), pending, false)))
                .contains("p-3");
        assertThat(tracking.unfinishedProcess(gzipped, new StoredResponse(409, List.of(), pending, false)))
                .as("not a 2xx").isEmpty();
        assertThat(tracking.unfinishedProcess(List.of(), new StoredResponse(202, List.of(), pending, false)))
                .as("gzip bytes read as they are").isEmpty();
    }
}
