package dev.retrysafe.loadtests.jmh;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/** Prints a JMH JSON result file ({@code -rf json}) as a Markdown table, ready to paste; used by {@code jmh.sh}. */
public final class JmhMarkdownTable {

    private JmhMarkdownTable() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: JmhMarkdownTable <jmh-results.json>");
            System.exit(2);
        }
        JsonNode results = new ObjectMapper().readTree(Files.readAllBytes(Path.of(args[0])));
        StringBuilder table = new StringBuilder()
                .append("| Benchmark | Mode | Cnt | Mean | Error (99.9 %) | Unit |\n")
                .append("|---|---|--:|--:|--:|---|\n");
        for (JsonNode result : results) {
            JsonNode metric = result.path("primaryMetric");
            double score = metric.path("score").asDouble();
            JsonNode error = metric.path("scoreError");
            table.append("| ").append(shortName(result.path("benchmark").asString()))
                    .append(params(result.path("params")))
                    .append(" | ").append(result.path("mode").asString())
                    .append(" | ").append(metric.path("rawData").path(0).size())
                    .append(" | ").append(format(score, score))
                    .append(" | ").append(error.isNumber() && !Double.isNaN(error.asDouble())
                            ? "± " + format(error.asDouble(), score) : "n/a")
                    .append(" | ").append(metric.path("scoreUnit").asString())
                    .append(" |\n");
        }
        System.out.print(table);
    }

    /** {@code Class.method}: the package adds nothing in a table. */
    private static String shortName(String benchmark) {
        int method = benchmark.lastIndexOf('.');
        int type = method < 0 ? -1 : benchmark.lastIndexOf('.', method - 1);
        return benchmark.substring(type + 1);
    }

    private static String params(JsonNode params) {
        if (params.isMissingNode() || params.isEmpty()) {
            return "";
        }
        StringBuilder out = new StringBuilder(" (");
        params.properties().forEach(entry -> {
            if (out.length() > 2) {
                out.append(", ");
            }
            out.append(entry.getKey()).append('=').append(entry.getValue().asString());
        });
        return out.append(')').toString();
    }

    /** Fixed decimals chosen from the mean, so that a mean and its error line up: 0.052, 3.41, 27.3, 1,234. */
    private static String format(double value, double mean) {
        double magnitude = Math.abs(mean);
        int decimals = magnitude < 1 ? 3 : magnitude < 10 ? 2 : magnitude < 1_000 ? 1 : 0;
        return String.format(Locale.ROOT, "%,." + decimals + "f", value);
    }
}
