package dev.retrysafe.gateway.idempotency.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.springframework.util.MultiValueMap;
import org.springframework.web.util.UriComponentsBuilder;
import org.springframework.web.util.UriUtils;

/**
 * Values in a lookup's query, over generated hostile values (every character that delimits or escapes something
 * in a URI, whitespace, line breaks and non-ASCII, in any mix): the lookup parsed as a URI goes to the same host,
 * has the template's path unchanged and no fragment, and its query has exactly the template's parameters, in its
 * order, each value decoding to the original. Checked with java.net.URI and with Spring's own URI parser.
 */
class LookupTemplateQueryPropertiesTest {
    static final LookupTemplate PAYMENTS =
            LookupTemplate.parse("/v1/payments?idempotency_key={key}&tax={body:/taxId}&source=gateway");
    static final List<String> PIECES = List.of("&", "=", "#", "/", "%", "?", "+", " ", "  ", "%26", "%3D", "%2B",
            "%%", "%zz", "%2e%2e", "..", ".", "../", "a", "Z", "0", "-", "_", "~", "\\", "\"", "'", "[", "]", "@",
            ":", ";", ",", "!", "$", "*", "(", ")", "{", "}", "|", "^", "`", "<", ">", "\r\n", "\t", "\u0000", "ü",
            "ß", "☃", "日本", "😀", "\u00a0", "\u200b", "idempotency_key=", "&source=evil", "#frag", "?x=1",
            "http://evil.example", "//evil.example");

    @Provide
    Arbitrary<String> hostile() {
        return Arbitraries.of(PIECES).list().ofMinSize(1).ofMaxSize(12).map(pieces -> String.join("", pieces));
    }

    @Property(tries = 1000)
    void aHostileValueIsOneQueryValueAndNothingElse(@ForAll("hostile") String key, @ForAll("hostile") String taxId)
            throws URISyntaxException {
        String lookup = PAYMENTS.expand(Map.of("key", key, "body:/taxId", taxId)).orElseThrow();

        URI uri = new URI("http://upstream:8081" + lookup);
        assertThat(uri.getHost()).isEqualTo("upstream");
        assertThat(uri.getPort()).isEqualTo(8081);
        assertThat(uri.getRawFragment()).isNull();
        assertThat(uri.getRawPath()).isEqualTo("/v1/payments");
        assertThat(uri.normalize().getRawPath()).isEqualTo("/v1/payments");
        List<String> names = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (String parameter : uri.getRawQuery().split("&", -1)) {
            String[] nameAndValue = parameter.split("=", -1);
            assertThat(nameAndValue).as(parameter).hasSize(2);
            assertThat(nameAndValue[1]).as("only unreserved characters and escapes").matches("[A-Za-z0-9\\-._~%]+");
            names.add(nameAndValue[0]);
            values.add(URLDecoder.decode(nameAndValue[1], StandardCharsets.UTF_8));
        }
        assertThat(names).containsExactly("idempotency_key", "tax", "source");
        assertThat(values).containsExactly(key, taxId, "gateway");

        MultiValueMap<String, String> spring = UriComponentsBuilder.fromUri(uri).build().getQueryParams();
        assertThat(spring.keySet()).containsExactly("idempotency_key", "tax", "source");
        assertThat(UriUtils.decode(spring.getFirst("idempotency_key"), StandardCharsets.UTF_8)).isEqualTo(key);
        assertThat(UriUtils.decode(spring.getFirst("tax"), StandardCharsets.UTF_8)).isEqualTo(taxId);
    }

    @Property(tries = 300)
    void aHostileValueInThePathAndTheQueryStaysInItsPlace(@ForAll("hostile") String merchant,
            @ForAll("hostile") String key) throws URISyntaxException {
        LookupTemplate template = LookupTemplate.parse("/merchants/{body:/merchant}/payments?idempotency_key={key}");
        var lookup = template.expand(Map.of("body:/merchant", merchant, "key", key));
        if (merchant.equals(".") || merchant.equals("..")) {
            assertThat(lookup).as("a dot segment is not looked up").isEmpty();
            return;
        }

        URI uri = new URI("http://upstream:8081" + lookup.orElseThrow());
        assertThat(uri.getRawFragment()).isNull();
        assertThat(uri.normalize().getRawPath()).isEqualTo(uri.getRawPath());
        assertThat(uri.getPath()).isEqualTo("/merchants/" + merchant + "/payments");
        assertThat(uri.getRawQuery()).startsWith("idempotency_key=").doesNotContain("&");
        assertThat(URLDecoder.decode(uri.getRawQuery().substring("idempotency_key=".length()),
                StandardCharsets.UTF_8)).isEqualTo(key);
    }
}
