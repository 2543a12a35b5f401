package dev.retrysafe.loadtests.jmh;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Deterministic request bodies for the micro-benchmarks: the same bytes on every run and machine (fixed seeds,
 * no clock, no locale-dependent formatting). Keys are written in a natural, unsorted order, as a client would
 * send them, so that canonicalisation has real sorting to do.
 */
final class MerchantBodies {

    /** Exactly 1 MiB: the size of {@link #rawBody()}; {@link #largeMerchant()} is just over it. */
    static final int ONE_MIB = 1 << 20;

    private static final String[] CITIES = {
        "Paris", "Lyon", "Marseille", "Toulouse", "Nantes", "Lille", "Bordeaux", "Strasbourg", "Montpellier", "Nice",
        "Rennes", "Grenoble", "Dijon", "Angers", "Reims", "Le Havre", "Saint-Étienne", "Toulon", "Brest", "Limoges",
    };
    private static final String[][] COUNTRIES = {
        {"FR", "EUR", "fr-FR"}, {"BE", "EUR", "fr-BE"}, {"DE", "EUR", "de-DE"}, {"ES", "EUR", "es-ES"},
        {"IT", "EUR", "it-IT"}, {"NL", "EUR", "nl-NL"}, {"CH", "CHF", "de-CH"}, {"GB", "GBP", "en-GB"},
    };
    private static final String[] PRODUCTS = {
        "Pain de campagne", "Baguette tradition", "Croissant pur beurre", "Pain au chocolat", "Brioche tressée",
        "Tarte aux pommes", "Éclair au café", "Fougasse aux olives", "Pain complet", "Chausson aux pommes",
        "Kouign-amann", "Financier amande", "Madeleine", "Macaron framboise", "Galette des rois",
    };
    private static final String[] CATEGORIES = {"bread", "viennoiserie", "pastry", "cake", "snack", "drink"};
    private static final String[] TAGS = {"organic", "vegan", "gluten-free", "seasonal", "daily", "local", "bestseller"};
    private static final String[] PAYMENT_METHODS = {
        "card", "sepa_debit", "apple_pay", "google_pay", "ideal", "bancontact", "klarna", "paypal",
    };

    private MerchantBodies() {
    }

    /** A typical Onboarding {@code POST /merchants} body, about 2 KB of compact UTF-8 JSON. */
    static byte[] typicalMerchant() {
        StringBuilder json = new StringBuilder(2_500);
        json.append('{');
        merchantHeader(json);
        json.append(",\"sites\":[")
                .append("{\"url\":\"https://boulangerie-muller.example\",\"name\":\"Boutique en ligne\",\"default\":true,\"locale\":\"fr-FR\"},")
                .append("{\"url\":\"https://muller-bakery.example/en\",\"name\":\"Online shop (EN)\",\"default\":false,\"locale\":\"en-GB\"},")
                .append("{\"url\":\"https://app.muller-bakery.example\",\"name\":\"Click & collect app\",\"default\":false,\"locale\":\"fr-FR\"}")
                .append(']');
        json.append('}');
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The same merchant with a large {@code sites} array (unordered: the canonical form sorts it) of similar
     * objects whose canonical texts share long prefixes, and a large ordered {@code catalog}; just over 1 MiB.
     */
    static byte[] largeMerchant() {
        SplittableRandom random = new SplittableRandom(20250401L);
        StringBuilder json = new StringBuilder(ONE_MIB + 64 * 1024);
        json.append('{');
        merchantHeader(json);

        int siteCount = 2_500;
        List<Integer> siteNumbers = new ArrayList<>(siteCount);
        for (int i = 0; i < siteCount; i++) {
            siteNumbers.add(i + 1);
        }
        // Clients list sites in whatever order their database returns: a deterministic shuffle.
        for (int i = siteCount - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            siteNumbers.set(j, siteNumbers.set(i, siteNumbers.get(j)));
        }
        json.append(",\"sites\":[");
        for (int i = 0; i < siteCount; i++) {
            if (i > 0) {
                json.append(',');
            }
            site(json, siteNumbers.get(i), random);
        }
        json.append(']');

        json.append(",\"catalog\":[");
        for (int sku = 1; json.length() < ONE_MIB; sku++) {
            if (sku > 1) {
                json.append(',');
            }
            catalogItem(json, sku, random);
        }
        json.append("]}");
        return json.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Exactly 1 MiB of pseudo-random bytes, as an upload that is not JSON would be. */
    static byte[] rawBody() {
        byte[] body = new byte[ONE_MIB];
        SplittableRandom random = new SplittableRandom(42L);
        for (int i = 0; i < body.length; i += Long.BYTES) {
            long bits = random.nextLong();
            for (int b = 0; b < Long.BYTES; b++) {
                body[i + b] = (byte) (bits >>> (8 * b));
            }
        }
        return body;
    }

    /** Everything but {@code sites}, without the enclosing braces. */
    private static void merchantHeader(StringBuilder json) {
        json.append("\"legalName\":\"Boulangerie Müller & Fils SARL\"")
                .append(",\"tradingName\":\"Müller Bakery\"")
                .append(",\"taxId\":\"FR40303265045\"")
                .append(",\"email\":\"onboarding@boulangerie-muller.example\"")
                .append(",\"phone\":\"+33 1 42 68 53 00\"")
                .append(",\"website\":\"https://boulangerie-muller.example\"")
                .append(",\"mcc\":5462,\"foundedYear\":1987,\"employees\":42")
                .append(",\"annualVolume\":1250000.50,\"averageTicket\":18.40")
                .append(",\"address\":{\"line1\":\"12 rue des Martyrs\",\"line2\":null,\"postalCode\":\"75009\",")
                .append("\"city\":\"Paris\",\"region\":\"Île-de-France\",\"country\":\"FR\",")
                .append("\"geo\":{\"lat\":48.8783,\"lon\":2.3397}}")
                .append(",\"contacts\":[")
                .append("{\"role\":\"owner\",\"firstName\":\"Anna\",\"lastName\":\"Müller\",")
                .append("\"email\":\"anna@boulangerie-muller.example\",\"phone\":\"+33 6 12 34 56 78\",\"primary\":true},")
                .append("{\"role\":\"finance\",\"firstName\":\"Karim\",\"lastName\":\"Benali\",")
                .append("\"email\":\"compta@boulangerie-muller.example\",\"phone\":\"+33 6 98 76 54 32\",\"primary\":false},")
                .append("{\"role\":\"technical\",\"firstName\":\"Léa\",\"lastName\":\"Dubois\",")
                .append("\"email\":\"it@boulangerie-muller.example\",\"phone\":null,\"primary\":false}]")
                .append(",\"integrations\":[")
                .append("{\"type\":\"webhook\",\"url\":\"https://hooks.boulangerie-muller.example/payments\",")
                .append("\"events\":[\"payment.succeeded\",\"payment.failed\",\"refund.created\",\"payout.paid\"],")
                .append("\"secretRef\":\"whsec_ref_7f3a9c\",\"enabled\":true},")
                .append("{\"type\":\"erp\",\"provider\":\"sage\",\"accountId\":\"SAGE-88412\",\"syncIntervalMinutes\":15,\"enabled\":true},")
                .append("{\"type\":\"pos\",\"provider\":\"square\",\"locationIds\":[\"LOC-PARIS-09\",\"LOC-PARIS-18\"],\"enabled\":false}]")
                .append(",\"paymentMethods\":[\"sepa_debit\",\"card\",\"apple_pay\",\"google_pay\",\"ideal\"]")
                .append(",\"settings\":{\"currency\":\"EUR\",\"locale\":\"fr-FR\",\"timezone\":\"Europe/Paris\",")
                .append("\"payouts\":{\"schedule\":\"weekly\",\"dayOfWeek\":\"friday\",\"minimumAmount\":100.00,\"currency\":\"EUR\"},")
                .append("\"risk\":{\"threeDSecure\":\"always\",\"maxTicket\":5000,\"velocity\":{\"perHour\":120,\"perDay\":2000},")
                .append("\"blockedCountries\":[\"KP\",\"IR\"]},")
                .append("\"notifications\":{\"email\":true,\"sms\":false,\"webhook\":true},")
                .append("\"statementDescriptor\":\"MULLER BAKERY\",\"capture\":\"automatic\",\"refundWindowDays\":90,")
                .append("\"fees\":{\"cardPercent\":1.4,\"cardFixed\":0.25,\"sepaFixed\":0.35}}")
                .append(",\"metadata\":{\"source\":\"partner-portal\",\"campaign\":\"spring-2025\",\"referrer\":null,")
                .append("\"notes\":\"Family bakery, three shops in Paris; wants weekly payouts.\"}")
                .append(",\"acceptedTerms\":true,\"termsVersion\":\"2025-03\"");
    }

    private static void site(StringBuilder json, int number, SplittableRandom random) {
        String[] country = COUNTRIES[number % COUNTRIES.length];
        String city = CITIES[number % CITIES.length];
        String id = String.format(java.util.Locale.ROOT, "%06d", number);
        json.append("{\"siteId\":\"site-").append(id).append('"')
                .append(",\"name\":\"Müller Bakery ").append(city).append(" #").append(number).append('"')
                .append(",\"url\":\"https://shop-").append(number).append(".muller-bakery.example/")
                .append(country[2].toLowerCase(java.util.Locale.ROOT)).append('"')
                .append(",\"country\":\"").append(country[0]).append('"')
                .append(",\"currency\":\"").append(country[1]).append('"')
                .append(",\"locale\":\"").append(country[2]).append('"')
                .append(",\"active\":").append(random.nextInt(10) != 0)
                .append(",\"openedOn\":\"").append(2005 + random.nextInt(20)).append('-')
                .append(twoDigits(1 + random.nextInt(12))).append('-').append(twoDigits(1 + random.nextInt(28))).append('"')
                .append(",\"monthlyVolume\":").append(cents(random.nextLong(10_000L, 25_000_000L)))
                .append(",\"terminals\":").append(1 + random.nextInt(12))
                .append('}');
    }

    private static void catalogItem(StringBuilder json, int sku, SplittableRandom random) {
        String product = PRODUCTS[random.nextInt(PRODUCTS.length)];
        json.append("{\"sku\":\"SKU-").append(String.format(java.util.Locale.ROOT, "%06d", sku)).append('"')
                .append(",\"name\":\"").append(product).append(' ').append(100 + 50 * random.nextInt(10)).append(" g\"")
                .append(",\"category\":\"").append(CATEGORIES[random.nextInt(CATEGORIES.length)]).append('"')
                .append(",\"price\":{\"amount\":").append(cents(random.nextLong(50L, 5_000L)))
                .append(",\"currency\":\"EUR\"}")
                .append(",\"vatRate\":").append(random.nextBoolean() ? "5.5" : "20.0")
                .append(",\"tags\":[\"").append(TAGS[random.nextInt(TAGS.length)]).append("\",\"")
                .append(TAGS[random.nextInt(TAGS.length)]).append("\"]")
                .append(",\"paymentMethods\":[\"").append(PAYMENT_METHODS[random.nextInt(PAYMENT_METHODS.length)])
                .append("\",\"card\"]")
                .append(",\"stock\":").append(random.nextInt(500))
                .append(",\"active\":").append(random.nextInt(20) != 0)
                .append(",\"gtin\":\"376").append(String.format(java.util.Locale.ROOT, "%010d", random.nextLong(10_000_000_000L)))
                .append("\"}");
    }

    private static String twoDigits(int value) {
        return value < 10 ? "0" + value : Integer.toString(value);
    }

    /** An amount with exactly two decimals (so "12.50" and "3.00" occur: numbers the canonical form rewrites). */
    private static String cents(long cents) {
        long units = cents / 100;
        long rest = cents % 100;
        return units + "." + (rest < 10 ? "0" + rest : Long.toString(rest));
    }
}
