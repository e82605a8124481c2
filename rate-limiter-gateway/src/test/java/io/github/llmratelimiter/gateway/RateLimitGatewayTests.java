package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.KeySnapshot;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.ModelTokenLimit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.Reservation;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.internal.HttpFields;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The charge step without any web framework: a request's credential, model and body in, the outcome
 * out, and the headers or the problem as data, through the synchronous and the asynchronous path,
 * on the in-memory store with a manual ticker.
 */
class RateLimitGatewayTests {

  private static final String KEY = "sk-gateway-0123456789";
  private static final String CHAT = "{\"model\":\"gpt-4o\",\"max_tokens\":100,"
      + "\"messages\":[{\"role\":\"user\",\"content\":\"abcdefgh\"}]}";
  /** The default estimate of {@link #CHAT}: 3 per request + (4 per message + 12 bytes / 4) + 100. */
  private static final long CHAT_ESTIMATE = 3 + (4 + 3) + 100;

  /** A parser that knows the bodies these tests send (the gateway has no parser of its own). */
  private static final JsonReader JSON = (bytes, off, len) -> {
    String s = new String(bytes, off, len, StandardCharsets.UTF_8);
    return switch (s) {
      case CHAT -> Map.of("model", "gpt-4o", "max_tokens", 100,
          "messages", List.of(Map.of("role", "user", "content", "abcdefgh")));
      case "{\"model\":7}" -> Map.of("model", 7);
      case "{\"model\":\"gpt-4o\",\"max_tokens\":-1}" -> Map.of("model", "gpt-4o", "max_tokens", -1);
      case "{\"model\":\"gpt-4o\",\"n\":1.5}" -> Map.of("model", "gpt-4o", "n", 1.5);
      default -> null;
    };
  };

  private final ManualTicker ticker = new ManualTicker();
  private final List<RateLimitStore> stores = new ArrayList<>();
  private final List<RateLimitOutcome> observed = new ArrayList<>();

  @AfterEach
  void closeStores() {
    stores.forEach(RateLimitStore::close);
  }

  /**
   * {@code rpm} requests a minute per key and model; with {@code tpm}, also that many model tokens a
   * minute.
   */
  private RateLimitGateway gateway(long rpm, Long tpm, RateLimitStore store, StoreFailure failure,
      Function<RateLimitGateway.Builder, RateLimitGateway.Builder> options) {
    return gateway(rpm, tpm, store, failure, options, JSON);
  }

  private RateLimitGateway gateway(long rpm, Long tpm, RateLimitStore store, StoreFailure failure,
      Function<RateLimitGateway.Builder, RateLimitGateway.Builder> options, JsonReader json) {
    Budget budget = new Budget("default", WindowLimit.perMinute(rpm), null,
        tpm == null ? null : ModelTokenLimit.perMinute(tpm));
    RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
        .policy("default", KeyScope.API_KEY_AND_MODEL, budget).build();
    RateLimitEnforcer enforcer = new RateLimitEnforcer(store, policies, failure,
        () -> List.of((outcome, nanos) -> observed.add(outcome)));
    return options.apply(RateLimitGateway.builder(enforcer, json)).build();
  }

  private RateLimitGateway gateway(Long tpm) {
    return gateway(2, tpm, memory(), StoreFailure.DENY, b -> b);
  }

  private RateLimitGateway gateway(Long tpm, RateLimitStore store, StoreFailure failure,
      Function<RateLimitGateway.Builder, RateLimitGateway.Builder> options) {
    return gateway(2, tpm, store, failure, options);
  }

  private RateLimitStore memory() {
    RateLimitStore store = RateLimitStore.inMemory(ticker);
    stores.add(store);
    return store;
  }

  private static RateLimitContext chat(RateLimitGateway gateway, String body) {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    RateLimitContext context = gateway.context(bytes.length, "application/json");
    context.body(RequestBody.of(bytes, false));
    return context;
  }

  /** One request through the route's steps: check, key from credential and body, charge. */
  private static RateLimitOutcome request(RateLimitGateway gateway, RateLimitContext context) {
    gateway.check(context);
    RateLimitKey key = gateway.resolveKey(KEY, context.modelSource()
        .model(context::jsonBodyModel, () -> null));
    return gateway.charge(context, null, key, 1);
  }

  private static Map<String, String> asMap(List<ResponseHeader> headers) {
    Map<String, String> map = new java.util.LinkedHashMap<>();
    headers.forEach(h -> assertThat(map.put(h.name(), h.value())).as("repeated " + h.name()).isNull());
    return map;
  }

  private static Throwable failure(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().get(5, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable[] seen = new Throwable[1];
      stage.whenComplete((v, t) -> seen[0] = t);
      return seen[0]; // as a dependent stage sees it: unwrapped
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    throw new AssertionError("the stage completed normally");
  }

  @Test
  void aRequestIsAdmittedUntilItsLimitThenRejectedWithA429AsData() {
    RateLimitGateway gateway = gateway(null);

    RateLimitOutcome first = request(gateway, chat(gateway, CHAT));
    Map<String, String> headers = asMap(gateway.headers(first));
    assertThat(first.key()).isEqualTo(RateLimitKey.of(KEY, "gpt-4o"));
    assertThat(headers).containsEntry("RateLimit-Policy", "\"default\";q=2;w=60")
        .containsEntry("RateLimit", "\"default\";r=1;t=60")
        .containsEntry("x-ratelimit-limit-requests", "2")
        .containsEntry("x-ratelimit-remaining-requests", "1")
        .doesNotContainKeys("Retry-After", "retry-after-ms", "x-ratelimit-limit-tokens");
    request(gateway, chat(gateway, CHAT));

    RateLimitExceededException denied = (RateLimitExceededException) catchThrowable(
        () -> request(gateway, chat(gateway, CHAT)));
    RateLimitRejection rejection = gateway.reject(denied, "/v1/chat/completions");

    assertThat(rejection.status()).isEqualTo(429);
    assertThat(asMap(rejection.headers())).containsEntry("Retry-After", "60")
        .containsEntry("retry-after-ms", "60000").containsEntry("x-ratelimit-remaining-requests", "0");
    RateLimitProblem problem = rejection.problem();
    assertThat(problem.type()).isEqualTo(DefaultRateLimitProblemFactory.RATE_LIMITED_TYPE);
    assertThat(problem.title()).isEqualTo("Too Many Requests");
    assertThat(problem.instance()).isEqualTo(URI.create("/v1/chat/completions"));
    assertThat(problem.detail()).contains("policy 'default'").contains("Retry after 60000 ms");
    assertThat(problem.members()).containsExactly(Map.entry("reason", "RPM_LIMIT"),
        Map.entry("policy", "default"), Map.entry("level", "default"),
        Map.entry("retryable", true), Map.entry("retryAfterMs", 60_000L));
    assertThat(problem.toString()).doesNotContain(KEY);

    ticker.advance(Duration.ofMinutes(1));
    assertThat(request(gateway, chat(gateway, CHAT)).decision().allowed()).isTrue();
    assertThat(observed).hasSize(4);
  }

  private static Throwable catchThrowable(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      return e;
    }
    throw new AssertionError("nothing was thrown");
  }

  @Test
  void theAsynchronousPathGivesTheSameOutcomesHeadersAndProblems() {
    RateLimitGateway sync = gateway(500L);
    RateLimitGateway async = gateway(500L);
    for (int i = 0; i < 3; i++) {
      RateLimitContext a = chat(sync, CHAT);
      RateLimitContext b = chat(async, CHAT);
      RateLimitKey key = RateLimitKey.of(KEY, "gpt-4o");
      if (i < 2) {
        RateLimitOutcome expected = sync.charge(a, "default", key, 1);
        RateLimitOutcome actual = async.chargeAsync(b, "default", key, 1).toCompletableFuture().join();
        assertThat(actual.decision()).isEqualTo(expected.decision());
        assertThat(async.headers(actual)).isEqualTo(sync.headers(expected));
        assertThat(b.outcome()).isSameAs(actual);
        assertThat(b.modelTokens().estimate()).isEqualTo(CHAT_ESTIMATE);
      } else {
        Throwable expected = catchThrowable(() -> sync.charge(a, "default", key, 1));
        Throwable actual = failure(async.chargeAsync(b, "default", key, 1));
        assertThat(actual).isInstanceOf(RateLimitExceededException.class);
        RateLimitRejection want = sync.reject(expected, "/v1/chat/completions");
        RateLimitRejection got = async.reject(new CompletionException(actual), "/v1/chat/completions");
        assertThat(got).isEqualTo(want);
        assertThat(b.charged()).isTrue();
        assertThat(b.modelTokens()).isNull();
      }
    }
  }

  @Test
  void anAsynchronousChargeLeavesTheCallerWhileTheStoreDecides() {
    DeferredStore store = new DeferredStore(memory());
    RateLimitGateway gateway = gateway(null, store, StoreFailure.DENY, b -> b);
    RateLimitContext context = chat(gateway, CHAT);

    CompletionStage<RateLimitOutcome> stage =
        gateway.chargeAsync(context, null, RateLimitKey.of(KEY, "gpt-4o"), 1);

    assertThat(stage.toCompletableFuture()).isNotDone();
    assertThat(context.charged()).isFalse();
    assertThat(observed).isEmpty();
    store.release();
    assertThat(stage.toCompletableFuture().join().decision().remaining()).isEqualTo(1);
    assertThat(context.charged()).isTrue();
    assertThat(observed).hasSize(1);
  }

  @Test
  void aRequestIsChargedOnceHoweverManyPartsAsk() {
    RateLimitGateway gateway = gateway(null);
    RateLimitContext context = chat(gateway, CHAT);
    RateLimitOutcome first = request(gateway, context);

    assertThat(gateway.charge(context, null, RateLimitKey.of("sk-another-0123456789", null), 5))
        .isSameAs(first);
    assertThat(gateway.chargeAsync(context, null, RateLimitKey.of(KEY, null), 1)
        .toCompletableFuture().join()).isSameAs(first);
    assertThat(request(gateway, chat(gateway, CHAT)).decision().remaining()).isZero();
    assertThat(observed).hasSize(2);
  }

  @Test
  void modelTokensAreReservedFromTheBodyAndSettledWithTheUsage() {
    RateLimitGateway gateway = gateway(1000L);
    RateLimitContext context = chat(gateway, CHAT);

    RateLimitOutcome outcome = request(gateway, context);

    assertThat(context.modelTokens().estimate()).isEqualTo(CHAT_ESTIMATE);
    assertThat(asMap(gateway.headers(outcome))).containsEntry("x-ratelimit-limit-tokens", "1000")
        .containsEntry("x-ratelimit-remaining-tokens", Long.toString(1000 - CHAT_ESTIMATE));
    assertThat(gateway.settle(context, 30L, false)).isTrue();
    assertThat(gateway.settle(context, 999L, false)).isFalse();
    assertThat(gateway.settleAsync(context, 999L, false).toCompletableFuture().join()).isFalse();

    RateLimitOutcome next = request(gateway, chat(gateway, CHAT));
    assertThat(next.reservation().remainingModelTokens()).isEqualTo(1000 - 30 - CHAT_ESTIMATE);
  }

  @Test
  void aFailedCallIsRefundedAsynchronouslyAndAnUnreportedOneKeepsItsEstimate() {
    RateLimitGateway gateway = gateway(5, 1000L, memory(), StoreFailure.DENY, b -> b);
    RateLimitContext failed = chat(gateway, CHAT);
    request(gateway, failed);
    assertThat(gateway.settleAsync(failed, null, true).toCompletableFuture().join()).isTrue();

    RateLimitContext unreported = chat(gateway, CHAT);
    RateLimitOutcome second = request(gateway, unreported); // the refund left only this one
    assertThat(second.reservation().remainingModelTokens()).isEqualTo(1000 - CHAT_ESTIMATE);
    assertThat(gateway.settle(unreported, null, false)).isTrue();

    RateLimitOutcome third = request(gateway, chat(gateway, CHAT)); // the kept estimate stays
    assertThat(third.reservation().remainingModelTokens()).isEqualTo(1000 - 2 * CHAT_ESTIMATE);
  }

  @Test
  void anEstimateAboveTheModelTokenLimitIsAFinal429SayingWhy() {
    RateLimitGateway gateway = gateway(50L);
    Throwable denied = catchThrowable(() -> request(gateway, chat(gateway, CHAT)));
    RateLimitRejection rejection = gateway.reject(denied, null);

    assertThat(rejection.status()).isEqualTo(429);
    assertThat(rejection.problem().instance()).isNull();
    assertThat(rejection.problem().members()).containsEntry("reason", "COST_EXCEEDS_CAPACITY")
        .containsEntry("retryable", false).containsEntry("estimatedModelTokens", CHAT_ESTIMATE)
        .doesNotContainKey("retryAfterMs");
    assertThat(rejection.problem().detail()).contains("exceeds the model-token limit of 50");
    assertThat(asMap(rejection.headers())).doesNotContainKeys("Retry-After", "retry-after-ms");
  }

  @ParameterizedTest
  @ValueSource(strings = {"{\"model\":\"gpt-4o\",\"max_tokens\":-1}", "{\"model\":\"gpt-4o\",\"n\":1.5}",
      "{\"model\":7}"})
  void aBodyTheEstimateCannotTrustIsA400AndNothingIsCharged(String body) {
    RateLimitGateway gateway = gateway(1000L);

    Throwable invalid = catchThrowable(() -> request(gateway, chat(gateway, body)));
    RateLimitRejection rejection = gateway.reject(invalid, "/v1/chat/completions");

    assertThat(invalid).isInstanceOf(InvalidRateLimitRequestException.class);
    assertThat(rejection.status()).isEqualTo(400);
    assertThat(rejection.problem().title()).isEqualTo("Bad Request");
    assertThat(rejection.problem().detail()).containsAnyOf("max_tokens", "n must", "\"model\"");
    assertThat(observed).isEmpty();
    assertThat(request(gateway, chat(gateway, CHAT)).decision().remaining()).isEqualTo(1);
  }

  /** A reader of {@link #CHAT} that counts how it is asked to parse. */
  private static final class CountingJson implements JsonReader {

    int whole;
    int members;

    @Override
    public Map<String, Object> parseObject(byte[] json, int off, int len) {
      whole++;
      return JSON.parseObject(json, off, len);
    }

    @Override
    public Map<String, Object> parseMembers(byte[] json, int off, int len) {
      members++;
      Map<String, Object> map = new java.util.LinkedHashMap<>(JSON.parseObject(json, off, len));
      map.replaceAll((k, v) -> v instanceof Map ? Map.of() : v instanceof List ? List.of() : v);
      return map;
    }
  }

  @ParameterizedTest
  @ValueSource(booleans = {true, false})
  void aPolicyThatEstimatesParsesTheBodyOnceWholeAndOneThatDoesNotReadsOnlyItsMembers(
      boolean policyKnown) {
    for (Long tpm : new Long[] {null, 1000L}) {
      CountingJson json = new CountingJson();
      RateLimitGateway gateway = gateway(2, tpm, memory(), StoreFailure.DENY, b -> b, json);
      RateLimitContext context = chat(gateway, CHAT);

      if (policyKnown) {
        gateway.check(context, "default");
      } else { // an annotated handler's front door: read as the policies that may estimate need
        gateway.check(context);
      }
      RateLimitKey key = gateway.resolveKey(KEY, context.modelSource()
          .model(context::jsonBodyModel, () -> null));
      RateLimitOutcome outcome = gateway.charge(context, "default", key, 1);

      assertThat(key.model()).isEqualTo("gpt-4o");
      assertThat(outcome.decision().allowed()).isTrue();
      if (tpm == null) {
        assertThat(json.whole).as("without model tokens").isZero();
        assertThat(json.members).as("without model tokens").isOne();
      } else {
        assertThat(outcome.modelTokens().estimate()).isEqualTo(CHAT_ESTIMATE);
        assertThat(json.whole).as("with model tokens").isOne();
        assertThat(json.members).as("with model tokens").isZero();
      }
    }
  }

  @Test
  void aCompletionCapThatIsAnObjectIsA400NamingItsType() {
    JsonReader json = (bytes, off, len) -> Map.of("model", "gpt-4o", "max_tokens", Map.of("a", 1));
    RateLimitGateway gateway = gateway(2, null, memory(), StoreFailure.DENY, b -> b, json);

    assertThatThrownBy(() -> gateway.check(chat(gateway, "{}"), "default"))
        .isInstanceOf(InvalidRateLimitRequestException.class)
        .hasMessage("max_tokens must be an integer from 0 to 2147483647, but was a JSON object");
  }

  @Test
  void aBodyAboveMaxBodyIsA413BeforeItIsRead() {
    RateLimitGateway gateway = gateway(null, memory(), StoreFailure.DENY,
        b -> b.bodyLimits(new BodyLimits(64, 64, true, ModelSource.BODY_THEN_QUERY)));
    RateLimitContext declared = gateway.context(65, "application/json");
    declared.body(new RequestBody() {
      @Override
      public byte[] bytes() {
        throw new AssertionError("a declared length above max-body is rejected without reading");
      }

      @Override
      public boolean tooLong() {
        throw new AssertionError("a declared length above max-body is rejected without reading");
      }
    });
    RateLimitContext chunked = gateway.context(-1, "application/json");
    chunked.body(RequestBody.of(null, true));

    for (RateLimitContext context : List.of(declared, chunked)) {
      Throwable tooLarge = catchThrowable(() -> gateway.check(context));
      RateLimitRejection rejection = gateway.reject(tooLarge, "/v1/chat/completions");
      assertThat(rejection.status()).isEqualTo(413);
      assertThat(rejection.problem().title()).isEqualTo("Content Too Large");
      assertThat(rejection.problem().members()).containsEntry("maxBodyBytes", 64L);
    }
    Throwable async = failure(gateway.chargeAsync(chunked, null, RateLimitKey.of(KEY, null), 1));
    assertThat(async).isInstanceOf(RequestBodyTooLargeException.class);
    assertThat(observed).isEmpty();
  }

  @Test
  void aMissingKeyIsA401OrTheAnonymousKeyAsConfigured() {
    RateLimitGateway rejecting = gateway(null);
    for (String none : new String[] {null, "", "  "}) {
      Throwable missing = catchThrowable(() -> rejecting.resolveKey(none, "gpt-4o"));
      RateLimitRejection rejection = rejecting.reject(missing, "/v1/chat/completions");
      assertThat(rejection.status()).isEqualTo(401);
      assertThat(rejection.headers()).containsExactly(new ResponseHeader("WWW-Authenticate", "Bearer"));
      assertThat(rejection.problem().detail()).contains("Authorization: Bearer");
    }
    RateLimitGateway anonymous = gateway(null, memory(), StoreFailure.DENY,
        b -> b.missingKey(MissingKey.ANONYMOUS, "shared"));
    assertThat(anonymous.resolveKey(null, "gpt-4o")).isEqualTo(RateLimitKey.of("shared", "gpt-4o"));
    assertThat(anonymous.resolveKey(KEY, null)).isEqualTo(RateLimitKey.of(KEY, null));
  }

  @Test
  void eachKeySourceNamesItsKeysApartAndAMissingOneFollowsMissingKeyWithoutNamingItself() {
    RateLimitGateway rejecting = gateway(null);
    assertThat(rejecting.callerKey(KeySource.API_KEY, KEY)).isEqualTo(KEY);
    assertThat(rejecting.callerKey(KeySource.EXPRESSION, "tenant-7")).isEqualTo("tenant-7");
    // a caller cannot pick an API key that shares a principal's or an address's budget
    assertThat(rejecting.callerKey(KeySource.PRINCIPAL, "alice")).isEqualTo("principal:alice");
    assertThat(rejecting.callerKey(KeySource.CLIENT_IP, "203.0.113.7")).isEqualTo("ip:203.0.113.7");
    for (String none : new String[] {null, "", " \t"}) {
      RateLimitRejection principal = rejecting.reject(
          catchThrowable(() -> rejecting.callerKey(KeySource.PRINCIPAL, none)), "/v1/chat");
      assertThat(principal.status()).isEqualTo(401);
      assertThat(principal.headers()).isEmpty(); // the application's authentication owns the scheme
      assertThat(principal.problem().detail()).contains("not authenticated");
      for (KeySource other : new KeySource[] {KeySource.CLIENT_IP, KeySource.EXPRESSION}) {
        RateLimitRejection rejection = rejecting.reject(
            catchThrowable(() -> rejecting.callerKey(other, none)), "/v1/chat");
        assertThat(rejection.status()).isEqualTo(400);
        assertThat(rejection.problem().detail())
            .isEqualTo("The request does not carry what this endpoint's rate limit is counted by.");
      }
    }
    RateLimitGateway anonymous = gateway(null, memory(), StoreFailure.DENY,
        b -> b.missingKey(MissingKey.ANONYMOUS, "shared"));
    for (KeySource source : KeySource.values()) {
      assertThat(anonymous.callerKey(source, " ")).isEqualTo("shared");
    }
    assertThatThrownBy(() -> rejecting.callerKey(null, KEY))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("source must not be null");
    assertThatThrownBy(() -> new MissingApiKeyException(KeySource.EXPRESSION))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("EXPRESSION");
  }

  @Test
  void aContentTypeIsJsonOrAFormByItsMediaTypeNeverByAParameter() {
    assertThat(Stream.of("application/json", "APPLICATION/JSON; charset=utf-8", " application/json ",
        "application/vnd.openai+json", "application/problem+json;x=1"))
        .allMatch(HttpFields::isJson);
    assertThat(Stream.of("text/plain; x=json", "application/jsonl", "application/x-json-stream",
        "json", "application/+json-no", "application/x-www-form-urlencoded; x=application/json"))
        .noneMatch(HttpFields::isJson);
    assertThat(Stream.of("application/x-www-form-urlencoded", " Application/X-WWW-Form-Urlencoded ;charset=utf-8",
        "multipart/form-data; boundary=x"))
        .allMatch(HttpFields::isForm);
    assertThat(Stream.of("application/json; x=\"application/x-www-form-urlencoded\"",
        "application/json; y=multipart/form-data", "text/application/x-www-form-urlencoded",
        "application/x-www-form-urlencodedx", "multipart/"))
        .noneMatch(HttpFields::isForm);
    assertThat(HttpFields.isJson(null)).isFalse();
    assertThat(HttpFields.isForm(null)).isFalse();
  }

  @Test
  void aJsonBodyIsReadInItsDeclaredCharset() {
    byte[] utf8 = "{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_8);
    byte[] ebcdic = "{\"model\":\"gpt-4o\"}".getBytes(java.nio.charset.Charset.forName("IBM037"));
    assertThat(HttpFields.jsonAsRead(ebcdic, "application/json; charset=IBM037")).isEqualTo(utf8);
    assertThat(HttpFields.jsonAsRead(ebcdic, "application/json; foo=bar; CharSet=\"ibm037\""))
        .isEqualTo(utf8);
    // none, or a Unicode one: the bytes as sent (the reader detects UTF-16 and UTF-32 itself)
    byte[] utf16 = "{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_16LE);
    assertThat(HttpFields.jsonAsRead(utf16, "application/json;charset=UTF-16LE")).isSameAs(utf16);
    assertThat(HttpFields.jsonAsRead(utf8, "application/json")).isSameAs(utf8);
    assertThat(HttpFields.jsonAsRead(utf8, "application/json; charset=utf8")).isSameAs(utf8);
    assertThat(HttpFields.jsonAsRead(utf8, null)).isSameAs(utf8);
    // parameters as Spring reads them: a semicolon inside quotes splits nothing, the last wins
    assertThat(HttpFields.jsonAsRead(utf8, "application/json; x=\"a;charset=IBM037\"")).isSameAs(utf8);
    assertThat(HttpFields.jsonAsRead(utf8, "application/json; charset=IBM037; CHARSET=utf-8"))
        .isSameAs(utf8);
    assertThat(HttpFields.jsonAsRead(ebcdic, "application/json; charset=utf-8; charset=IBM037"))
        .isEqualTo(utf8);
    for (String bad : List.of("application/json; charset=x-no-such", "application/json; charset=\"a b\"")) {
      assertThatThrownBy(() -> HttpFields.jsonAsRead(utf8, bad))
          .isInstanceOf(InvalidRateLimitRequestException.class).hasMessageContaining("charset");
    }
  }

  @Test
  void aClientAddressIsNamedAlikeOnEveryStack() {
    assertThat(HttpFields.clientAddress(" 203.0.113.7 ")).isEqualTo("203.0.113.7");
    assertThat(HttpFields.clientAddress("[2001:db8::1]")).isEqualTo("2001:db8:0:0::/64");
    assertThat(HttpFields.clientAddress("2001:db8::1")).isEqualTo("2001:db8:0:0::/64");
    // every address of one /64, however written, is one client
    assertThat(Stream.of("2001:DB8:0:7:ffff:ffff:ffff:fffe", "2001:db8:0:7::1", "[2001:db8::7:0:0:0:1]",
        "2001:0db8:0000:0007:0000:0000:0000:0002", "2001:db8:0:7::9%eth0"))
        .map(HttpFields::clientAddress).containsOnly("2001:db8:0:7::/64");
    assertThat(HttpFields.clientAddress("2001:db8:0:8::1")).isEqualTo("2001:db8:0:8::/64");
    assertThat(HttpFields.clientAddress("0:0:0:0:0:0:0:1")).isEqualTo("0:0:0:0::/64");
    assertThat(HttpFields.clientAddress("::ffff:203.0.113.7")).isEqualTo("203.0.113.7");
    // what is not an address literal is kept as reported, and never looked up
    assertThat(HttpFields.clientAddress("unknown")).isEqualTo("unknown");
    assertThat(HttpFields.clientAddress("zz:1")).isEqualTo("zz:1");
    assertThat(HttpFields.clientAddress("1:2:3")).isEqualTo("1:2:3");
    assertThat(HttpFields.clientAddress(null)).isNull();
    assertThat(HttpFields.clientAddress(" ")).isNull();
  }

  @Test
  void aStoreThatFailsIsA503WhenFailuresDenyAndADegradedPassWhenTheyAllow() {
    RateLimitGateway deny = gateway(null, new FailingStore(), StoreFailure.DENY, b -> b);
    Throwable sync = catchThrowable(() -> request(deny, chat(deny, CHAT)));
    Throwable async = failure(deny.chargeAsync(chat(deny, CHAT), null, RateLimitKey.of(KEY, null), 1));
    for (Throwable unavailable : List.of(sync, async)) {
      assertThat(unavailable).isInstanceOf(RateLimitStoreUnavailableException.class);
      RateLimitRejection rejection = deny.reject(unavailable, "/v1/chat/completions");
      assertThat(rejection.status()).isEqualTo(503);
      assertThat(rejection.headers()).isEmpty();
      assertThat(rejection.problem().members()).containsEntry("policy", "default");
    }

    RateLimitGateway allow = gateway(null, new FailingStore(), StoreFailure.ALLOW, b -> b);
    RateLimitOutcome degraded = request(allow, chat(allow, CHAT));
    RateLimitOutcome asyncDegraded = allow.chargeAsync(chat(allow, CHAT), null,
        RateLimitKey.of(KEY, null), 1).toCompletableFuture().join();
    assertThat(degraded.degraded()).isTrue();
    assertThat(asyncDegraded.degraded()).isTrue();
    assertThat(allow.headers(degraded)).isEmpty();
  }

  @Test
  void aStoreThatDeniesForItsBackendIsA503WithItsRetryTime() {
    RateLimitGateway gateway = gateway(null);
    RateLimitPolicy policy = gateway.enforcer().policies().policy(null);
    RateLimitKey key = RateLimitKey.of(KEY, null);
    RateLimitOutcome outcome = new RateLimitOutcome(policy, key,
        Decision.retryableDeny(Reason.STORE_UNAVAILABLE, 0, 1500, 1500, "default"),
        policy.budgets(key), false);

    RateLimitRejection rejection = gateway.reject(new RateLimitExceededException(outcome), "/x");

    assertThat(rejection.status()).isEqualTo(503);
    assertThat(rejection.headers()).containsExactly(new ResponseHeader("Retry-After", "2"),
        new ResponseHeader("retry-after-ms", "1500"));
    assertThat(rejection.problem().members()).containsEntry("retryAfterMs", 1500L);
  }

  @Test
  void aFailureThatIsNotTheLimitersIsLeftToTheFrontDoor() {
    RateLimitGateway gateway = gateway(null);
    assertThat(gateway.reject(new IllegalStateException("handler bug"), "/x")).isNull();
    assertThat(gateway.reject(new IllegalArgumentException("not ours"), "/x")).isNull();
  }

  @Test
  void aPathThatIsNotAUriLeavesTheInstanceOut() {
    assertThat(RateLimitProblem.of(400, "bad", "/v1/a b|c").instance()).isNull();
    assertThat(RateLimitProblem.of(400, "bad", "/v1/a%20b").instance()).isEqualTo(URI.create("/v1/a%20b"));
  }

  @Test
  void theOpenAiErrorObjectIsAMemberOfTheProblem() {
    RateLimitProblem problem = RateLimitProblem.of(429, "slow down", "/v1/chat/completions")
        .withOpenAiError("requests", null, "rate_limit_exceeded");
    Map<String, Object> error = new java.util.LinkedHashMap<>();
    error.put("message", "slow down");
    error.put("type", "requests");
    error.put("param", null);
    error.put("code", "rate_limit_exceeded");
    assertThat(problem.members()).containsExactly(Map.entry("error", error));
    List<Object> names = List.copyOf(((Map<?, ?>) problem.members().get("error")).keySet());
    assertThat(names).containsExactly("message", "type", "param", "code");
  }

  @Test
  void dataThatWouldCorruptAResponseIsRejected() {
    assertThatThrownBy(() -> new ResponseHeader("X-Evil", "a\r\nSet-Cookie: x=1"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("X-Evil");
    assertThatThrownBy(() -> new ResponseHeader("Bad Name", "v"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Bad Name");
    assertThatThrownBy(() -> RateLimitProblem.of(429, "d", null).with("status", 200))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("status");
    assertThatThrownBy(() -> RateLimitProblem.of(200, "d", null))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("200");
  }

  /** A store whose asynchronous answers wait until the test releases them. */
  private static final class DeferredStore extends ForwardingStore {

    private final List<Runnable> pending = new ArrayList<>();

    DeferredStore(RateLimitStore delegate) {
      super(delegate);
    }

    @Override
    public synchronized CompletionStage<Reservation> reserveAsync(List<Budget> levels,
        List<String> keys, double cost, long estimate, Composition composition) {
      CompletableFuture<Reservation> answer = new CompletableFuture<>();
      pending.add(() -> answer.complete(delegate.reserve(levels, keys, cost, estimate, composition)));
      return answer;
    }

    synchronized void release() {
      pending.forEach(Runnable::run);
      pending.clear();
    }
  }

  @Test
  void modelTokensChargedAfterTheFactFillTheWindowWithoutARequestSlot() {
    RateLimitGateway gateway = gateway(1000L);
    RateLimitKey key = gateway.resolveKey(KEY, "gpt-4o");
    RateLimitPolicy policy = gateway.enforcer().policies().policy(null);
    Budget budget = policy.budgets(key).get(0);
    String stored = policy.keys(key).get(0);
    gateway.chargeModelTokens(null, key, 900);
    gateway.chargeModelTokensAsync(null, key, 50).toCompletableFuture().join();
    KeySnapshot s = gateway.enforcer().store().administration().orElseThrow()
        .inspect(budget, stored).orElseThrow();
    assertThat(s.modelTokensUsed()).isEqualTo(950);
    assertThat(s.windowUsed()).as("no request slot").isZero();
    assertThat(gateway.resolveKey(KEY, "gpt-4o-mini")).isNotEqualTo(key);
    assertThatThrownBy(() -> request(gateway, chat(gateway, CHAT)))
        .isInstanceOfSatisfying(RateLimitExceededException.class,
            e -> assertThat(e.decision().reason()).isEqualTo(Reason.TPM_LIMIT));
    assertThat(observed).as("a charge after the fact decides nothing").hasSize(1);
  }

  @Test
  void aChargeAfterTheFactRejectsBadInputAndLosesAFailedChargeQuietly() {
    RateLimitGateway gateway = gateway(1000L);
    RateLimitKey key = gateway.resolveKey(KEY, "gpt-4o");
    assertThatThrownBy(() -> gateway.chargeModelTokens(null, key, -5))
        .isInstanceOf(InvalidRateLimitRequestException.class).hasMessageContaining("modelTokens")
        .hasMessageContaining("-5");
    assertThatThrownBy(() -> gateway.chargeModelTokensAsync("nope", key, 5))
        .isInstanceOf(InvalidRateLimitRequestException.class).hasMessageContaining("nope");
    RateLimitGateway failing = gateway(1000L, new FailingStore(), StoreFailure.DENY, b -> b);
    failing.chargeModelTokens(null, key, 5); // logged, not thrown: the usage happened already
    assertThat(failing.chargeModelTokensAsync(null, key, 5).toCompletableFuture().join()).isNull();
  }

  /**
   * A store whose every decision and model-token charge fails, synchronously or asynchronously, as
   * an unreachable one.
   */
  private static final class FailingStore extends ForwardingStore {

    FailingStore() {
      super(null);
    }

    @Override
    public Decision acquire(List<Budget> levels, List<String> keys, double cost, Composition c) {
      throw new IllegalStateException("connection refused");
    }

    @Override
    public CompletionStage<Decision> acquireAsync(
        List<Budget> levels, List<String> keys, double cost, Composition c) {
      return CompletableFuture.failedFuture(new IllegalStateException("connection refused"));
    }

    @Override
    public Reservation reserve(List<Budget> levels, List<String> keys, double cost, long estimate,
        Composition c) {
      throw new IllegalStateException("connection refused");
    }

    @Override
    public CompletionStage<Reservation> reserveAsync(List<Budget> levels, List<String> keys,
        double cost, long estimate, Composition c) {
      return CompletableFuture.failedFuture(new IllegalStateException("connection refused"));
    }

    @Override
    public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {
      throw new IllegalStateException("connection refused");
    }

    @Override
    public CompletionStage<Void> chargeModelTokensAsync(
        List<Budget> levels, List<String> keys, long modelTokens) {
      return CompletableFuture.failedFuture(new IllegalStateException("connection refused"));
    }
  }
}
