package dev.retrysafe.loadtests.gatling;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;

/**
 * Realistic Onboarding merchant bodies (the fields the sample backend validates: legalName, a taxId of 8-15 letters
 * or digits, an e-mail with @; plus the integrations/paymentMethods/sites arrays and a nested settings object),
 * derived from the idempotency key so that every virtual user resending a key resends exactly the same intent.
 *
 * <p>{@link #replayJson} renders the same intent differently (object keys in another order, other whitespace, and
 * optionally the unordered arrays shuffled): the gateway canonicalises JSON before fingerprinting, so it must still
 * recognise the replay. {@link #changedJson} changes one value, somewhere else each time: a different intent.
 */
public final class MerchantPayloads {

    private static final String[] PAYMENT_METHODS = {"CARD", "PIX", "BOLETO", "DEBIT", "WALLET"};
    private static final String[] CITIES = {"Sao Paulo", "Curitiba", "Recife", "Porto Alegre", "Belo Horizonte"};

    private MerchantPayloads() {
    }

    /** A fresh idempotency key: a random UUID (36 characters of [0-9a-f-], inside the gateway's 16-64 rule). */
    public static String newKey() {
        return UUID.randomUUID().toString();
    }

    /** The first write for {@code key}. */
    public static String json(String key) {
        return render(Merchant.of(key), false, false);
    }

    /** The same intent as {@link #json}, written differently. */
    public static String replayJson(String key, boolean shuffleUnorderedArrays) {
        return render(Merchant.of(key), true, shuffleUnorderedArrays);
    }

    /** A different intent under the same key: variant 0..n changes one field each (top level, nested or an array). */
    public static String changedJson(String key, int variant) {
        Merchant m = Merchant.of(key);
        Merchant changed = switch (Math.floorMod(variant, 5)) {
            case 0 -> m.withLegalName(m.legalName + " Holding");
            case 1 -> m.withTaxId(m.taxId.substring(0, m.taxId.length() - 1) + (m.taxId.endsWith("9") ? "8" : "9"));
            case 2 -> m.withCurrency("USD".equals(m.currency) ? "BRL" : "USD");
            case 3 -> m.withPaymentMethods(appendOne(m.paymentMethods));
            default -> m.withSettlementDays(m.settlementDays + 1);
        };
        return render(changed, false, false);
    }

    private static List<String> appendOne(List<String> methods) {
        List<String> more = new ArrayList<>(methods);
        for (String candidate : PAYMENT_METHODS) {
            if (!more.contains(candidate)) {
                more.add(candidate);
                return more;
            }
        }
        more.add("CRYPTO");
        return more;
    }

    private record Merchant(String legalName, String taxId, String email, String storeId, List<String> paymentMethods,
            String site, String city, String currency, int settlementDays) {

        static Merchant of(String key) {
            // Deterministic per key: every user resending this key sends this very merchant.
            long h = mix(key.hashCode());
            String id = Long.toString(h & 0xFFFFFFFFFFL, 36).toUpperCase(Locale.ROOT);
            String taxId = ("TX" + id + "0000000000").substring(0, 12); // 12 letters/digits: inside [A-Za-z0-9]{8,15}
            String slug = id.toLowerCase(Locale.ROOT);
            List<String> methods = new ArrayList<>();
            methods.add("CARD");
            methods.add("PIX");
            if ((h & 1) == 0) {
                methods.add("BOLETO");
            }
            return new Merchant("Loja " + id + " Comercio Ltda", taxId,
                    "finance+" + slug + "@loja-" + slug + ".example", "shp-" + slug, methods,
                    "https://loja-" + slug + ".example", CITIES[(int) ((h >>> 8) % CITIES.length)],
                    (h & 2) == 0 ? "BRL" : "USD", 1 + (int) ((h >>> 16) % 3));
        }

        Merchant withLegalName(String v) {
            return new Merchant(v, taxId, email, storeId, paymentMethods, site, city, currency, settlementDays);
        }

        Merchant withTaxId(String v) {
            return new Merchant(legalName, v, email, storeId, paymentMethods, site, city, currency, settlementDays);
        }

        Merchant withCurrency(String v) {
            return new Merchant(legalName, taxId, email, storeId, paymentMethods, site, city, v, settlementDays);
        }

        Merchant withPaymentMethods(List<String> v) {
            return new Merchant(legalName, taxId, email, storeId, v, site, city, currency, settlementDays);
        }

        Merchant withSettlementDays(int v) {
            return new Merchant(legalName, taxId, email, storeId, paymentMethods, site, city, currency, v);
        }

        private static long mix(long x) {
            x = (x ^ (x >>> 33)) * 0xff51afd7ed558ccdL;
            x = (x ^ (x >>> 33)) * 0xc4ceb9fe1a85ec53L;
            return (x ^ (x >>> 33)) & Long.MAX_VALUE;
        }
    }

    private static String render(Merchant m, boolean alternative, boolean shuffleArrays) {
        List<String> integrations = List.of(
                "{\"provider\":\"shopify\",\"storeId\":\"" + m.storeId + "\",\"enabled\":true}",
                "{\"provider\":\"erp-omie\",\"accountCode\":\"" + m.taxId + "\",\"enabled\":false}");
        List<String> methods = m.paymentMethods.stream().map(s -> "\"" + s + "\"").toList();
        List<String> sites = List.of(
                "{\"url\":\"" + m.site + "\",\"primary\":true}",
                "{\"url\":\"" + m.site.replace("https://", "https://m.") + "\",\"primary\":false}");
        if (shuffleArrays) {
            integrations = reversed(integrations);
            methods = reversed(methods);
            sites = reversed(sites);
        }
        String settings = alternative
                ? "{ \"notifications\": { \"webhookUrl\": \"" + m.site + "/hooks/onboarding\", \"email\": true },"
                        + " \"settlementDays\": " + m.settlementDays + ", \"currency\": \"" + m.currency + "\","
                        + " \"address\": { \"country\": \"BR\", \"city\": \"" + m.city + "\" } }"
                : "{\"currency\":\"" + m.currency + "\",\"settlementDays\":" + m.settlementDays
                        + ",\"address\":{\"city\":\"" + m.city + "\",\"country\":\"BR\"}"
                        + ",\"notifications\":{\"email\":true,\"webhookUrl\":\"" + m.site + "/hooks/onboarding\"}}";
        if (alternative) {
            return "{\n  \"settings\": " + settings
                    + ",\n  \"sites\": [" + String.join(", ", sites) + "]"
                    + ",\n  \"paymentMethods\": [" + String.join(", ", methods) + "]"
                    + ",\n  \"integrations\": [" + String.join(", ", integrations) + "]"
                    + ",\n  \"email\": \"" + m.email + "\""
                    + ",\n  \"taxId\": \"" + m.taxId + "\""
                    + ",\n  \"legalName\": \"" + m.legalName + "\"\n}";
        }
        return "{\"legalName\":\"" + m.legalName + "\",\"taxId\":\"" + m.taxId + "\",\"email\":\"" + m.email + "\""
                + ",\"integrations\":[" + String.join(",", integrations) + "]"
                + ",\"paymentMethods\":[" + String.join(",", methods) + "]"
                + ",\"sites\":[" + String.join(",", sites) + "]"
                + ",\"settings\":" + settings + "}";
    }

    private static <T> List<T> reversed(List<T> list) {
        List<T> copy = new ArrayList<>(list);
        java.util.Collections.reverse(copy);
        return copy;
    }
}
