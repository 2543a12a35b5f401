package dev.retrysafe.gateway.idempotency.config;

import java.util.Collection;
import java.util.Optional;

/** The valid name closest to a misspelt one, when one is close enough to be what was meant. */
final class NearestName {
    private NearestName() {
    }

    static Optional<String> to(String wrong, Collection<String> valid) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String candidate : valid) {
            int distance = distance(wrong, candidate);
            if (distance < bestDistance) {
                best = candidate;
                bestDistance = distance;
            }
        }
        // A third of the name may be wrong: catches typos and swapped letters, not unrelated names.
        return best != null && bestDistance <= Math.max(2, wrong.length() / 3) ? Optional.of(best) : Optional.empty();
    }

    /** Edit distance with transpositions (optimal string alignment): "lenght" is one step from "length". */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
                }
            }
        }
        return d[a.length()][b.length()];
    }
}
