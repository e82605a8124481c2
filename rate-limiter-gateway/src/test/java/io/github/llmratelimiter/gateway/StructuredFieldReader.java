package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.greenbytes.http.sfv.IntegerItem;
import org.greenbytes.http.sfv.Item;
import org.greenbytes.http.sfv.ListElement;
import org.greenbytes.http.sfv.Parameters;
import org.greenbytes.http.sfv.Parser;
import org.greenbytes.http.sfv.StringItem;

/**
 * Reads {@code RateLimit-Policy} and {@code RateLimit} as a client does, with an RFC 8941 parser
 * (Julian Reschke's, not ours), and checks what the ratelimit-headers draft asks of them: each a
 * list of items named by strings, {@code q} a non-negative integer, {@code qu} one of the units
 * the limiter sends (and the one an item's kind needs: a limit on calls in flight counts
 * concurrent requests, a model-token window model tokens, a window or a bucket requests, the
 * draft's default), {@code w} a positive integer; {@code RateLimit} items that each name a policy
 * item once (all of them, in its order or with the denying item moved first, when the store
 * reported its figures), {@code r} a non-negative integer at most its {@code q}, {@code t} a
 * non-negative integer.
 */
public final class StructuredFieldReader {

  private static final Set<String> UNITS = Set.of("concurrent-requests", "tokens", "cost-micros");

  private StructuredFieldReader() {}

  /**
   * Checks the two structured headers among {@code headers}, when present.
   *
   * @param headers a response's headers, by name
   */
  public static void check(Map<String, String> headers) {
    String policy = headers.get(RateLimitHeaders.POLICY);
    String rateLimit = headers.get(RateLimitHeaders.RATE_LIMIT);
    if (policy == null) {
      assertThat(rateLimit).as("RateLimit without RateLimit-Policy").isNull();
      return;
    }
    Map<String, Long> quotas = new LinkedHashMap<>();
    for (ListElement<?> e : Parser.parseList(policy).get()) {
      assertThat(e).as("a policy item of %s", policy).isInstanceOf(StringItem.class);
      String name = (String) e.get();
      Parameters p = e.getParams();
      assertThat(p.keySet()).as(name).isSubsetOf("q", "qu", "w").contains("q");
      long q = integer(p, "q", name);
      assertThat(q).as(name).isNotNegative();
      assertThat(quotas.put(name, q)).as("one item named %s", name).isNull();
      Item<?> unit = p.get("qu");
      if (unit != null) {
        assertThat(unit).as(name).isInstanceOf(StringItem.class);
        assertThat((String) unit.get()).as(name).isIn(UNITS);
      }
      String expected = name.endsWith(RateLimitHeaders.CONCURRENCY_SUFFIX) ? "concurrent-requests"
          : name.endsWith(RateLimitHeaders.TOKENS_SUFFIX) ? "tokens"
          : name.contains("/") ? null // a quota: its unit is its own
          : "";
      if (expected != null) {
        assertThat(unit == null ? "" : (String) unit.get()).as("the unit of %s", name)
            .isEqualTo(expected);
      }
      if (p.containsKey("w")) {
        assertThat(integer(p, "w", name)).as(name).isPositive();
      }
    }
    if (rateLimit == null) { // the draft makes it optional: a deny that read no state tells none
      return;
    }
    List<ListElement<? extends Object>> items = Parser.parseList(rateLimit).get();
    List<String> names = new java.util.ArrayList<>();
    for (ListElement<?> e : items) {
      assertThat(e).as("an item of %s", rateLimit).isInstanceOf(StringItem.class);
      String name = (String) e.get();
      names.add(name);
      Parameters p = e.getParams();
      assertThat(p.keySet()).as(name).isSubsetOf("r", "t").contains("r");
      assertThat(quotas).as("%s names a policy item", name).containsKey(name);
      assertThat(integer(p, "r", name)).as(name).isBetween(0L, quotas.get(name));
      if (p.containsKey("t")) {
        assertThat(integer(p, "t", name)).as(name).isNotNegative();
      }
    }
    assertThat(names).as("RateLimit names each budget once").doesNotHaveDuplicates();
    if (names.size() == quotas.size()) { // the store's figures: every item, the denying one first
      List<String> inOrder = new java.util.ArrayList<>(quotas.keySet());
      inOrder.remove(names.get(0));
      inOrder.add(0, names.get(0));
      assertThat(names).as("RateLimit's items: the policy's order, the first maybe moved ahead")
          .isIn(List.copyOf(quotas.keySet()), inOrder);
    }
  }

  private static long integer(Parameters p, String key, String item) {
    assertThat(p.get(key)).as("%s of %s", key, item).isInstanceOf(IntegerItem.class);
    return ((IntegerItem) p.get(key)).get();
  }
}
