package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.ConcurrencyLimit;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.LevelRemaining;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaStatus;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.core.internal.IdentityCache;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;

/**
 * The rate-limit headers of a response, from its outcome, as data ({@link ResponseHeader}s a front
 * door adds to its response unchanged). Every item tells the standing of the one budget it names,
 * never a figure mixed from several components.
 *
 * <ul>
 *   <li>{@code RateLimit-Policy}: every budget that can deny a call (IETF httpapi
 *       ratelimit-headers draft, structured-field list): per level, its window {@code
 *       "name";q=<limit>;w=<window seconds>}, and its burst bucket as an item of its own, {@code
 *       "name-burst";q=<capacity, rounded down>;w=<seconds to refill it from empty, rounded up>}
 *       ({@code w} left out for a bucket that never refills), and its limit on calls in flight,
 *       {@code "name-concurrency";q=<slots>;qu="concurrent-requests"} (no window: a slot frees
 *       when its call ends); then per level that limits model tokens {@code
 *       "name-tokens";q=<model tokens>;qu="tokens";w=<window seconds>}; then per quota {@code
 *       "level/quota";q=<limit>;w=<the current period's length in seconds>} (a day of 23 or 25
 *       hours, a month of 28 to 31 days, as the calendar has it), with {@code qu="tokens"} for a
 *       quota of model tokens and {@code qu="cost-micros"} for one of cost in micro-units. An
 *       item without {@code qu} counts requests, the draft's default unit;
 *   <li>{@code RateLimit}: one item per item of {@code RateLimit-Policy}, in its order, each with
 *       {@code r}, what is left of that budget after this call, and {@code t}, the seconds
 *       (rounded up) until it is whole again: the window's {@code r} the requests it admits,
 *       {@code t} until its newest admission leaves it; the burst item's {@code r} the unit-cost
 *       calls its bucket pays for (whole calls), {@code t} until it is full ({@code t} left out
 *       for a bucket that never refills); the concurrency item's {@code r} the free slots, without
 *       {@code t} (no clock tells when a call ends); the tokens item's {@code r} the model tokens
 *       its window admits, counting this call at its estimate (the response's usage settles it
 *       later), {@code t} until that window is empty; a quota's {@code r} what is left this period
 *       in its unit (requests, model tokens, or cost in micro-units), {@code t} until the period
 *       ends. After a deny, the item of the budget that denied comes first: {@code RPM_LIMIT} the
 *       window, {@code BURST_LIMIT} the burst item, {@code CONCURRENCY_LIMIT} the concurrency item
 *       (with {@code r=0}), {@code TPM_LIMIT} the tokens item, {@code QUOTA_EXCEEDED} the quota,
 *       each of the level that denied;
 *   <li>OpenAI's {@code x-ratelimit-limit-requests}, {@code x-ratelimit-remaining-requests} and
 *       {@code x-ratelimit-reset-requests} (a duration such as {@code 20ms}, {@code 7s} or {@code
 *       1m30s}): the request budget of one level, its window, or its bucket when it has no window
 *       (limit: the capacity rounded down). The level is the one that denied when it has such a
 *       budget, else the one with the fewest requests left (the first of equals); none of the
 *       three when no level has a window or a bucket;
 *   <li>when a level limits model tokens: OpenAI's {@code x-ratelimit-limit-tokens}, {@code
 *       x-ratelimit-remaining-tokens} and {@code x-ratelimit-reset-tokens}, the model-token budget
 *       of one level: the one that denied when it limits model tokens, else the one with the
 *       fewest model tokens left (the first of equals);
 *   <li>on a retryable deny only: {@code Retry-After} in whole seconds rounded up (at least 1) and
 *       {@code retry-after-ms}. A deny that waiting cannot clear gets neither.
 * </ul>
 *
 * <p>They describe the caller's policy only: a call that goes to an upstream shows none of the
 * upstream's figures, and a call its upstream denied shows its own levels' with the upstream's
 * {@code Retry-After}.
 *
 * <p>The figures are the store's per component ({@link Reservation#components()}). An outcome
 * without them (a decision alone, or a deny for which no state was read: a cost or an estimate
 * that never fits, a full table, a store that could not decide) names in {@code RateLimit} the
 * deciding level's item, the one that denied when the reason names a component, with {@code r}
 * the decision's {@link Decision#remaining()} (0 for such a deny) and {@code t} its reset, its
 * tokens item and quotas as the reservation reports them, and in {@code x-ratelimit-*-requests}
 * the deciding level. A cost or an estimate that never fits ({@code COST_EXCEEDS_CAPACITY}) is
 * refused before any state is read: nothing is known of what the levels have left, so neither
 * {@code RateLimit} nor OpenAI's request and token headers tell a figure of them ({@code
 * RateLimit-Policy} still lists their budgets and quotas, the quotas over their periods at the
 * refusal).
 *
 * <p>What depends only on a policy's levels (the policy header, the quoted names, the limits) is
 * formatted once per list of levels and cached; a call formats only its own numbers.
 */
public final class RateLimitHeaders {

  /** {@code RateLimit-Policy}: every level's quota and window. */
  public static final String POLICY = "RateLimit-Policy";
  /** {@code RateLimit}: what the deciding level has left. */
  public static final String RATE_LIMIT = "RateLimit";
  /** OpenAI's requests limit of the deciding level. */
  public static final String LIMIT_REQUESTS = "x-ratelimit-limit-requests";
  /** OpenAI's remaining requests of the deciding level. */
  public static final String REMAINING_REQUESTS = "x-ratelimit-remaining-requests";
  /** OpenAI's time until the deciding level's requests reset. */
  public static final String RESET_REQUESTS = "x-ratelimit-reset-requests";
  /** OpenAI's model-token limit. */
  public static final String LIMIT_TOKENS = "x-ratelimit-limit-tokens";
  /** OpenAI's remaining model tokens. */
  public static final String REMAINING_TOKENS = "x-ratelimit-remaining-tokens";
  /** OpenAI's time until the model tokens reset. */
  public static final String RESET_TOKENS = "x-ratelimit-reset-tokens";
  /** Appended to a level's name for its model-token item in the structured headers. */
  static final String TOKENS_SUFFIX = "-tokens";
  /** Appended to a level's name for its burst bucket's item in the structured headers. */
  static final String BURST_SUFFIX = "-burst";
  /** Appended to a level's name for its limit on calls in flight in {@code RateLimit-Policy}. */
  static final String CONCURRENCY_SUFFIX = "-concurrency";
  /**
   * The {@code qu} parameter of a limit on calls in flight: the draft's registered unit for
   * concurrent requests.
   */
  static final String CONCURRENCY_UNIT = ";qu=\"concurrent-requests\"";
  /**
   * The {@code qu} parameter of a budget in model tokens. Without it the draft reads the quota in
   * requests; the draft registers no unit for model tokens, so this names them plainly.
   */
  static final String TOKENS_UNIT = ";qu=\"tokens\"";
  /** The {@code qu} parameter of a budget in cost: micro-units of the operator's currency. */
  static final String COST_UNIT = ";qu=\"cost-micros\"";
  /** {@code Retry-After}, in whole seconds. */
  public static final String RETRY_AFTER = "Retry-After";
  /** {@code retry-after-ms}, OpenAI's retry time in milliseconds. */
  public static final String RETRY_AFTER_MS = "retry-after-ms";

  /** The most templates kept; past it the cache starts over (policies are few). */
  static final int MAX_TEMPLATES = 256;

  /** Per list of levels: what its headers repeat on every call, formatted once. */
  private static final Map<List<Budget>, Template> TEMPLATES = new ConcurrentHashMap<>();

  /** How many lists of levels {@link #RECENT} remembers by identity. */
  static final int RECENT_SIZE = 32;

  /**
   * The templates of the lists of levels seen last, by the lists' identity: a policy hands every
   * call on a model the same list ({@link RateLimitPolicy#budgets}), so a call finds its template
   * without hashing budgets.
   */
  private static final IdentityCache<List<Budget>, Template> RECENT =
      new IdentityCache<>(RECENT_SIZE);

  private RateLimitHeaders() {}

  /**
   * Returns the headers of an outcome, allowed or denied, in a stable order.
   *
   * @param outcome the outcome
   * @return the headers; none for a degraded outcome (the store failed and the call passed)
   */
  public static List<ResponseHeader> of(RateLimitOutcome outcome) {
    List<ResponseHeader> headers = new ArrayList<>(10);
    write(outcome, (name, value) -> headers.add(new ResponseHeader(name, value)));
    return List.copyOf(headers);
  }

  /**
   * Writes the headers of an outcome, in a stable order, to {@code sink}, without building a list:
   * for a front door that sets them on its response directly.
   *
   * @param outcome the outcome
   * @param sink receives each header's name and value; nothing for a degraded outcome
   */
  public static void write(RateLimitOutcome outcome, BiConsumer<String, String> sink) {
    if (outcome.degraded()) {
      return;
    }
    Decision d = outcome.decision();
    Template t = template(outcome.levels());
    Reservation reservation = outcome.reservation();
    List<QuotaStatus> quotas = outcome.quotas();
    QuotaStatus denying = d.denied() ? outcome.exceededQuota() : null;
    if (quotas.isEmpty()) {
      String policy = d.reason() == Reason.COST_EXCEEDS_CAPACITY && reservation != null
          ? refusedPolicy(t, reservation) : t.policy;
      if (policy != null) {
        sink.accept(POLICY, policy);
      }
    } else {
      sink.accept(POLICY, t.quotaTexts(quotas).policy);
    }
    long nowMs = reservation == null ? 0 : reservation.quotaAtMs();
    List<LevelRemaining> figures = reservation == null ? List.of() : reservation.components();
    if (figures.size() == t.levels.size() + 1 && outcome.upstream() != null) {
      figures = figures.subList(0, t.levels.size()); // the upstream's: not the caller's to see
    }
    if (figures.size() == t.levels.size()) {
      perComponent(t, d, figures, quotas, denying, nowMs, sink);
    } else {
      decisionOnly(t, d, reservation, quotas, denying, nowMs, sink);
    }
    if (d.denied() && d.retryable()) {
      sink.accept(RETRY_AFTER, Long.toString(Math.max(1, ceilSeconds(d.retryAfterMs()))));
      sink.accept(RETRY_AFTER_MS, Long.toString(d.retryAfterMs()));
    }
  }

  /**
   * {@code RateLimit-Policy} of a call refused before any state was read: the levels' items and,
   * when they have quotas, each quota's over its period that holds the instant of the refusal (as
   * a call that read them lists them: their limits do not depend on what was used).
   */
  private static @Nullable String refusedPolicy(Template t, Reservation reservation) {
    long atMs = reservation.quotaAtMs();
    if (atMs <= 0) {
      return t.policy;
    }
    Instant at = Instant.ofEpochMilli(atMs);
    List<QuotaStatus> periods = new ArrayList<>();
    for (Budget level : t.levels) {
      for (QuotaLimit q : level.quotas()) {
        long start = q.period().start(at, q.zone()).toEpochMilli();
        long end = q.period().end(at, q.zone()).toEpochMilli();
        periods.add(new QuotaStatus(level.name(), q, 0, start, end, List.of(), false));
      }
    }
    return periods.isEmpty() ? t.policy : t.quotaTexts(periods).policy;
  }

  /** The components of a level, as {@code RateLimit} names them. */
  static final int WINDOW = 0;
  static final int BURST = 1;
  static final int SLOTS = 2;
  static final int TOKENS = 3;
  /** No component: a deny by a quota or by no component of a level. */
  static final int NONE = -1;

  /** The component a deny's reason names, or {@link #NONE}. */
  static int component(Reason reason) {
    return switch (reason) {
      case RPM_LIMIT -> WINDOW;
      case BURST_LIMIT -> BURST;
      case CONCURRENCY_LIMIT -> SLOTS;
      case TPM_LIMIT -> TOKENS;
      default -> NONE;
    };
  }

  /**
   * {@code RateLimit} and OpenAI's headers from the store's figures per component: one item per
   * policy item, the denying one first.
   */
  private static void perComponent(Template t, Decision d, List<LevelRemaining> figures,
      List<QuotaStatus> quotas, @Nullable QuotaStatus denying, long nowMs,
      BiConsumer<String, String> sink) {
    int deciding = t.indexOf(d.level());
    int first = d.denied() ? component(d.reason()) : NONE;
    if (first != NONE && !t.has(deciding, first)) {
      first = NONE;
    }
    StringBuilder rateLimit = new StringBuilder(64 * (t.levels.size() + quotas.size()));
    String[] quotaItems = quotas.isEmpty() ? NO_ITEMS : t.quotaTexts(quotas).items;
    if (denying != null) {
      quotaRateLimit(rateLimit, quotaItems[quotas.indexOf(denying)], denying, nowMs);
    } else if (first != NONE) {
      t.append(rateLimit, deciding, first, figures.get(deciding));
    }
    for (int i = 0; i < t.levels.size(); i++) {
      for (int c = WINDOW; c <= SLOTS; c++) {
        if (t.has(i, c) && (i != deciding || c != first)) {
          t.append(separate(rateLimit), i, c, figures.get(i));
        }
      }
    }
    for (int i = 0; i < t.levels.size(); i++) {
      if (t.has(i, TOKENS) && (i != deciding || first != TOKENS)) {
        t.append(separate(rateLimit), i, TOKENS, figures.get(i));
      }
    }
    for (int i = 0; i < quotas.size(); i++) {
      QuotaStatus q = quotas.get(i);
      if (q != denying) {
        quotaRateLimit(separate(rateLimit), quotaItems[i], q, nowMs);
      }
    }
    if (rateLimit.length() > 0) {
      sink.accept(RATE_LIMIT, rateLimit.toString());
    }
    int requests = t.requestsLevel(d.denied() ? deciding : -1, figures);
    if (requests >= 0) {
      LevelRemaining f = figures.get(requests);
      boolean window = t.requestLimits[requests] != null;
      sink.accept(LIMIT_REQUESTS, window ? t.requestLimits[requests] : t.burstLimits[requests]);
      sink.accept(REMAINING_REQUESTS, Long.toString(window ? f.window() : f.bucket()));
      sink.accept(RESET_REQUESTS, duration(window ? f.windowResetMs() : f.bucketResetMs()));
    }
    int tokens = t.tokensLevel(d.denied() ? deciding : -1, figures);
    if (tokens >= 0) {
      LevelRemaining f = figures.get(tokens);
      sink.accept(LIMIT_TOKENS, t.tokenLimits[tokens]);
      sink.accept(REMAINING_TOKENS, Long.toString(f.modelTokens()));
      sink.accept(RESET_TOKENS, duration(f.modelTokensResetMs()));
    }
  }

  /** Appends the separator of a structured-field list when the list is not empty. */
  private static StringBuilder separate(StringBuilder list) {
    return list.length() == 0 ? list : list.append(", ");
  }

  /**
   * {@code RateLimit} and OpenAI's headers of an outcome without figures per component: the
   * deciding level's item with the decision's figures (see the class comment).
   */
  private static void decisionOnly(Template t, Decision d, @Nullable Reservation reservation,
      List<QuotaStatus> quotas, @Nullable QuotaStatus denying, long nowMs,
      BiConsumer<String, String> sink) {
    int deciding = t.indexOf(d.level());
    int tokens = t.tokensLevel(d.level());
    // a call whose cost no budget can ever hold is refused before any state is read: nothing is
    // known of what the level has left, so no figure of it is told
    boolean levelKnown = d.reason() != Reason.COST_EXCEEDS_CAPACITY;
    StringBuilder rateLimit = new StringBuilder(64);
    String[] quotaItems = quotas.isEmpty() ? NO_ITEMS : t.quotaTexts(quotas).items;
    if (denying != null) {
      quotaRateLimit(rateLimit, quotaItems[quotas.indexOf(denying)], denying, nowMs);
    }
    if (levelKnown) {
      separate(rateLimit).append(t.rateLimitItem(deciding, d.reason()))
          .append(";r=")
          .append(d.remaining()).append(";t=").append(ceilSeconds(d.resetAfterMs()));
    }
    boolean tokenHeaders = levelKnown && reservation != null && tokens >= 0;
    if (tokenHeaders) {
      separate(rateLimit).append(t.tokenItems[tokens]).append(";r=")
          .append(reservation.remainingModelTokens()).append(";t=")
          .append(ceilSeconds(reservation.modelTokensResetMs()));
    }
    for (int i = 0; i < quotas.size(); i++) {
      QuotaStatus q = quotas.get(i);
      if (q != denying) {
        quotaRateLimit(separate(rateLimit), quotaItems[i], q, nowMs);
      }
    }
    if (rateLimit.length() > 0) {
      sink.accept(RATE_LIMIT, rateLimit.toString());
    }
    if (levelKnown) {
      if (t.requestLimits[deciding] != null) {
        sink.accept(LIMIT_REQUESTS, t.requestLimits[deciding]);
      }
      sink.accept(REMAINING_REQUESTS, Long.toString(d.remaining()));
      sink.accept(RESET_REQUESTS, duration(d.resetAfterMs()));
    }
    if (tokenHeaders) {
      sink.accept(LIMIT_TOKENS, t.tokenLimits[tokens]);
      sink.accept(REMAINING_TOKENS, Long.toString(reservation.remainingModelTokens()));
      sink.accept(RESET_TOKENS, duration(reservation.modelTokensResetMs()));
    }
  }

  /** A quota's structured-field item: {@code "level/quota"}. */
  static String quotaItem(QuotaStatus q) {
    return item(q.level() + "/" + q.quota().name());
  }

  /**
   * A quota's item in {@code RateLimit} ({@code item}, its {@link #quotaItem}): what is left and
   * the seconds until its period ends.
   */
  private static void quotaRateLimit(StringBuilder sb, String item, QuotaStatus q, long nowMs) {
    long reset = nowMs > 0 ? q.resetMs(nowMs) : q.periodEndMs() - q.periodStartMs();
    sb.append(item).append(";r=").append(q.remaining()).append(";t=").append(ceilSeconds(reset));
  }

  private static final String[] NO_ITEMS = {};

  /**
   * The text of a list of quotas that does not change within their periods: {@code
   * RateLimit-Policy} (the levels' items, then each quota's), and each quota's item.
   */
  static final class QuotaTexts {

    private final String[] levels;
    private final QuotaLimit[] quotas;
    private final long[] periods;
    final String policy;
    final String[] items;

    QuotaTexts(@Nullable String levelsPolicy, List<QuotaStatus> statuses) {
      int n = statuses.size();
      levels = new String[n];
      quotas = new QuotaLimit[n];
      periods = new long[n];
      items = new String[n];
      StringBuilder policy = new StringBuilder(levelsPolicy == null ? "" : levelsPolicy);
      for (int i = 0; i < n; i++) {
        QuotaStatus q = statuses.get(i);
        levels[i] = q.level();
        quotas[i] = q.quota();
        periods[i] = q.periodEndMs() - q.periodStartMs();
        items[i] = quotaItem(q);
        policy.append(policy.length() == 0 ? "" : ", ").append(items[i]).append(";q=")
            .append(q.quota().limit()).append(unit(q.quota().unit())).append(";w=")
            .append(ceilSeconds(periods[i]));
      }
      this.policy = policy.toString();
    }

    /**
     * Whether these texts are those of {@code statuses}: the same quotas of the same levels, in
     * the same order, over periods of the same lengths (a day of 23, 24 or 25 hours, a month of
     * 28 to 31 days).
     */
    boolean describe(List<QuotaStatus> statuses) {
      if (statuses.size() != quotas.length) {
        return false;
      }
      for (int i = 0; i < quotas.length; i++) {
        QuotaStatus q = statuses.get(i);
        if ((q.quota() != quotas[i] && !q.quota().equals(quotas[i]))
            || q.periodEndMs() - q.periodStartMs() != periods[i] || !q.level().equals(levels[i])) {
          return false;
        }
      }
      return true;
    }
  }

  /**
   * The template of a list of levels: found by the list's identity among the recent ones, else in
   * the cache keyed by the levels' values (built on a miss).
   */
  static Template template(List<Budget> levels) {
    Template t = RECENT.find(levels);
    if (t != null) {
      return t;
    }
    t = TEMPLATES.get(levels);
    if (t == null) {
      if (TEMPLATES.size() >= MAX_TEMPLATES) {
        TEMPLATES.clear();
      }
      Template built = new Template(levels);
      t = TEMPLATES.putIfAbsent(built.levels, built);
      t = t == null ? built : t;
    }
    RECENT.put(levels, t);
    return t;
  }

  /** The number of templates cached now. */
  static int templates() {
    return TEMPLATES.size();
  }

  /** The parts of the headers that depend only on the levels. */
  static final class Template {

    final List<Budget> levels;
    /** {@code RateLimit-Policy}, or null when no level has a window or a model-token limit. */
    final @Nullable String policy;
    /** Each level's name as a structured-field string. */
    final String[] items;
    /** Each level's name with {@link #BURST_SUFFIX}, or null when it has no bucket. */
    final @Nullable String[] burstItems;
    /**
     * Whether the deciding level's {@code RateLimit} item is its burst item when no deny names the
     * component: it has a bucket, and no window or a bucket that holds fewer calls than the window.
     */
    final boolean[] burstBinds;
    /** Each level's name with {@link #CONCURRENCY_SUFFIX}, or null when it limits no calls in flight. */
    final @Nullable String[] concurrencyItems;
    /** Each level's name with {@link #TOKENS_SUFFIX}, or null when it limits no model tokens. */
    final @Nullable String[] tokenItems;
    /** Each level's window limit, or null when it has no window. */
    final @Nullable String[] requestLimits;
    /** Each level's model-token limit, or null when it has none. */
    final @Nullable String[] tokenLimits;
    /** Each level's bucket capacity rounded down, or null when it has no bucket. */
    final @Nullable String[] burstLimits;
    /** Whether each level's bucket refills (a {@code t} for its burst item). */
    final boolean[] refills;
    /** The texts of the quotas these levels reported last (see {@link #quotaTexts}). */
    private volatile @Nullable QuotaTexts quotaTexts;

    Template(List<Budget> levels) {
      this.levels = List.copyOf(levels);
      int n = this.levels.size();
      items = new String[n];
      burstItems = new String[n];
      burstBinds = new boolean[n];
      concurrencyItems = new String[n];
      tokenItems = new String[n];
      requestLimits = new String[n];
      tokenLimits = new String[n];
      burstLimits = new String[n];
      refills = new boolean[n];
      StringJoiner policy = new StringJoiner(", ");
      for (int i = 0; i < n; i++) {
        Budget level = this.levels.get(i);
        items[i] = item(level.name());
        WindowLimit w = level.window();
        if (w != null) {
          policy.add(items[i] + ";q=" + w.limit() + ";w=" + ceilSeconds(w.window().toMillis()));
          requestLimits[i] = Long.toString(w.limit());
        }
        BucketLimit b = level.bucket();
        if (b != null) {
          burstItems[i] = item(level.name() + BURST_SUFFIX);
          long capacity = (long) Math.floor(b.capacity());
          burstBinds[i] = w == null || capacity < w.limit();
          burstLimits[i] = Long.toString(capacity);
          refills[i] = b.refillPerSecond() > 0;
          policy.add(burstItems[i] + ";q=" + capacity + (b.refillPerSecond() > 0
              ? ";w=" + (long) Math.ceil(b.capacity() / b.refillPerSecond()) : ""));
        }
        ConcurrencyLimit c = level.concurrency();
        if (c != null) {
          concurrencyItems[i] = item(level.name() + CONCURRENCY_SUFFIX);
          policy.add(concurrencyItems[i] + ";q=" + c.limit() + CONCURRENCY_UNIT);
        }
      }
      for (int i = 0; i < n; i++) {
        ModelTokenLimit m = this.levels.get(i).modelTokens();
        if (m != null) {
          tokenItems[i] = item(this.levels.get(i).name() + TOKENS_SUFFIX);
          tokenLimits[i] = Long.toString(m.limit());
          policy.add(tokenItems[i] + ";q=" + m.limit() + TOKENS_UNIT + ";w="
              + ceilSeconds(m.window().toMillis()));
        }
      }
      this.policy = policy.length() > 0 ? policy.toString() : null;
    }

    /**
     * The texts of a call's quotas: those of the last call on these levels when they describe the
     * same quotas over periods of the same lengths, else built anew (and kept for the next call).
     */
    QuotaTexts quotaTexts(List<QuotaStatus> quotas) {
      QuotaTexts texts = quotaTexts;
      if (texts == null || !texts.describe(quotas)) {
        texts = new QuotaTexts(policy, quotas);
        quotaTexts = texts;
      }
      return texts;
    }

    /** Whether level {@code i} has component {@code c}, {@link #WINDOW} to {@link #TOKENS}. */
    boolean has(int i, int c) {
      return switch (c) {
        case WINDOW -> requestLimits[i] != null;
        case BURST -> burstItems[i] != null;
        case SLOTS -> concurrencyItems[i] != null;
        case TOKENS -> tokenItems[i] != null;
        default -> false;
      };
    }

    /** Appends the {@code RateLimit} item of component {@code c} of level {@code i}. */
    void append(StringBuilder sb, int i, int c, LevelRemaining f) {
      switch (c) {
        case WINDOW -> sb.append(items[i]).append(";r=").append(f.window()).append(";t=")
            .append(ceilSeconds(f.windowResetMs()));
        case BURST -> {
          sb.append(burstItems[i]).append(";r=").append(f.bucket());
          if (refills[i]) {
            sb.append(";t=").append(ceilSeconds(f.bucketResetMs()));
          }
        }
        case SLOTS -> sb.append(concurrencyItems[i]).append(";r=").append(f.slots());
        default -> sb.append(tokenItems[i]).append(";r=").append(f.modelTokens()).append(";t=")
            .append(ceilSeconds(f.modelTokensResetMs()));
      }
    }

    /**
     * The level whose request budget (its window, else its bucket) OpenAI's request headers
     * report: {@code denying} when it has one, else the one with the fewest requests left (the
     * first of equals); -1 when no level has a window or a bucket.
     */
    int requestsLevel(int denying, List<LevelRemaining> figures) {
      if (denying >= 0 && (has(denying, WINDOW) || has(denying, BURST))) {
        return denying;
      }
      int best = -1;
      long fewest = Long.MAX_VALUE;
      for (int i = 0; i < items.length; i++) {
        if (has(i, WINDOW) || has(i, BURST)) {
          long left = has(i, WINDOW) ? figures.get(i).window() : figures.get(i).bucket();
          if (best < 0 || left < fewest) {
            best = i;
            fewest = left;
          }
        }
      }
      return best;
    }

    /**
     * The level whose model tokens OpenAI's token headers report: {@code denying} when it limits
     * model tokens, else the one with the fewest left (the first of equals); -1 when none does.
     */
    int tokensLevel(int denying, List<LevelRemaining> figures) {
      if (denying >= 0 && has(denying, TOKENS)) {
        return denying;
      }
      int best = -1;
      for (int i = 0; i < items.length; i++) {
        if (has(i, TOKENS)
            && (best < 0 || figures.get(i).modelTokens() < figures.get(best).modelTokens())) {
          best = i;
        }
      }
      return best;
    }

    /** The item {@code RateLimit} names for the deciding level (see the class comment). */
    String rateLimitItem(int deciding, Reason reason) {
      String window = requestLimits[deciding] != null ? items[deciding] : null;
      String burst = burstItems[deciding];
      String slots = concurrencyItems[deciding];
      String denying = switch (reason) {
        case RPM_LIMIT -> window;
        case BURST_LIMIT -> burst;
        case CONCURRENCY_LIMIT -> slots;
        default -> null;
      };
      if (denying != null) {
        return denying;
      }
      if (burst != null && burstBinds[deciding]) {
        return burst;
      }
      if (window != null) {
        return window;
      }
      return slots != null ? slots : items[deciding];
    }

    /**
     * The index of the level that decided ({@link RateLimitOutcome#decidingBudget()}): the one
     * named, else the last.
     */
    int indexOf(@Nullable String name) {
      for (int i = 0; i < items.length; i++) {
        if (levels.get(i).name().equals(name)) {
          return i;
        }
      }
      return items.length - 1;
    }

    /**
     * The index of the model-token level the token headers describe: the deciding level when it
     * limits model tokens, else the one with the smallest limit (the first of equals); -1 when no
     * level limits model tokens.
     */
    int tokensLevel(@Nullable String deciding) {
      int best = -1;
      for (int i = 0; i < items.length; i++) {
        ModelTokenLimit m = levels.get(i).modelTokens();
        if (m == null) {
          continue;
        }
        if (levels.get(i).name().equals(deciding)) {
          return i;
        }
        if (best < 0 || m.limit() < levels.get(best).modelTokens().limit()) {
          best = i;
        }
      }
      return best;
    }
  }

  /**
   * Returns the headers that tell a client when to retry: {@code Retry-After} in whole seconds,
   * rounded up and at least 1, and {@code retry-after-ms}.
   *
   * @param retryAfterMs the milliseconds after which a retry may succeed, at least 1
   * @return the two headers
   * @throws IllegalArgumentException if {@code retryAfterMs} is below 1
   */
  public static List<ResponseHeader> retryAfter(long retryAfterMs) {
    if (retryAfterMs < 1) {
      throw new IllegalArgumentException("retryAfterMs must be >= 1, but was " + retryAfterMs);
    }
    return List.of(
        new ResponseHeader(RETRY_AFTER, Long.toString(Math.max(1, ceilSeconds(retryAfterMs)))),
        new ResponseHeader(RETRY_AFTER_MS, Long.toString(retryAfterMs)));
  }

  /** The {@code qu} parameter of a quota in {@code unit}: none for requests, the draft's default. */
  static String unit(QuotaUnit unit) {
    return switch (unit) {
      case REQUESTS -> "";
      case TOKENS -> TOKENS_UNIT;
      case COST -> COST_UNIT;
    };
  }

  /** Whole seconds, rounded up. */
  static long ceilSeconds(long ms) {
    return ms <= 0 ? 0 : (ms - 1) / 1000 + 1;
  }

  /** A structured-field string: printable ASCII, quotes and backslashes escaped. */
  static String item(String name) {
    StringBuilder sb = new StringBuilder(name.length() + 2).append('"');
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20 || c > 0x7e) {
        sb.append('?');
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }

  /** OpenAI's reset format: {@code 0s}, {@code 250ms}, {@code 7s}, {@code 1m30s}, {@code 2h0m5s}. */
  static String duration(long ms) {
    if (ms <= 0) {
      return "0s";
    }
    if (ms < 1000) {
      return ms + "ms";
    }
    long s = ceilSeconds(ms);
    long h = s / 3600;
    long m = (s % 3600) / 60;
    long sec = s % 60;
    if (h > 0) {
      return h + "h" + m + "m" + sec + "s";
    }
    return m > 0 ? m + "m" + sec + "s" : sec + "s";
  }
}
