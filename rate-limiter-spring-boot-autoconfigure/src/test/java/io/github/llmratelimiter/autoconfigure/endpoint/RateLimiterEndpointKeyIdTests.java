package io.github.llmratelimiter.autoconfigure.endpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.RateLimiterAutoConfiguration;
import io.github.llmratelimiter.autoconfigure.RateLimiterFailureAnalyzerAccess;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.TestHmac;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * The ids the endpoint shows for API keys: an HMAC under {@code ratelimiter.key-id-secret}, the
 * same in every application that sets the same secret, different per application without one.
 */
@ExtendWith(OutputCaptureExtension.class)
class RateLimiterEndpointKeyIdTests {

  private static final String KEY = "acme";
  private static final String SECRET = "a-shared-secret-of-32-bytes-0001";

  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(
          RateLimiterAutoConfiguration.class, RateLimiterEndpointAutoConfiguration.class))
      .withPropertyValues("management.endpoints.web.exposure.include=ratelimiter", "ratelimiter.rpm.limit=5");

  /** Charges the key once and returns the id the endpoint's report shows for it. */
  private static String shownId(AssertableApplicationContext context) {
    assertThat(context).hasNotFailed().hasSingleBean(RateLimiterEndpoint.class);
    context.getBean(RateLimitEnforcer.class).acquire(null, RateLimitKey.of(KEY, null), 1);
    List<String> ids = context.getBean(RateLimiterEndpoint.class).report(null).budgets().stream()
        .flatMap(b -> b.top().stream()).map(RateLimiterEndpoint.KeyState::id).toList();
    assertThat(ids).hasSize(1);
    return ids.get(0);
  }

  @Test
  void runWhenKeyIdSecretIsSetShouldShowTheKeysHmacAsItsIdAndFindTheKeyByIt() {
    runner.withPropertyValues("ratelimiter.key-id-secret=" + SECRET).run(context -> {
      String id = shownId(context);
      assertThat(id).isEqualTo(TestHmac.hex16(SECRET, KEY));
      RateLimiterEndpoint endpoint = context.getBean(RateLimiterEndpoint.class);
      RateLimiterEndpoint.KeyReport one = endpoint.key(id, null);
      assertThat(one).isNotNull();
      assertThat(one.id()).isEqualTo(id);
      assertThat(one.budgets()).singleElement().satisfies(s -> assertThat(s.windowUsed()).isEqualTo(1));
      assertThat(endpoint.reset(id, null).reset()).isEqualTo(1);
      assertThat(endpoint.key(id, null)).isNull();
    });
  }

  @Test
  void runWhenTwoApplicationsShareTheSecretShouldShowOneIdForAKey() {
    ApplicationContextRunner shared = runner.withPropertyValues("ratelimiter.key-id-secret=" + SECRET);
    shared.run(one -> shared.run(two -> {
      String id = shownId(one);
      assertThat(shownId(two)).isEqualTo(id);
      // the id one application showed finds the key in the other
      assertThat(two.getBean(RateLimiterEndpoint.class).key(id, null)).isNotNull();
    }));
  }

  @Test
  void runWhenNoSecretIsSetShouldShowDifferentIdsPerApplicationWithoutWarningOnTheMemoryStore(
      CapturedOutput output) {
    AtomicReference<String> first = new AtomicReference<>();
    runner.run(one -> runner.run(two -> {
      first.set(shownId(one));
      assertThat(shownId(two)).isNotEqualTo(first.get());
      assertThat(two.getBean(RateLimiterEndpoint.class).key(first.get(), null)).isNull();
      // still stable within one application
      assertThat(one.getBean(KeyIds.class).id(KEY)).isEqualTo(first.get());
    }));
    assertThat(first.get()).matches("[0-9a-f]{16}");
    assertThat(output).doesNotContain("ratelimiter.key-id-secret");
  }

  @Test
  void runWhenKeyIdSecretIsShorterThanSixteenBytesShouldFailNamingTheProperty() {
    runner.withPropertyValues("ratelimiter.key-id-secret=fifteen-bytes!!").run(context -> {
      assertThat(context).hasFailed();
      String description = RateLimiterFailureAnalyzerAccess.describe(context.getStartupFailure());
      assertThat(description)
          .contains("'ratelimiter.key-id-secret'", "15 bytes", "at least 16 bytes")
          .doesNotContain("fifteen-bytes!!");
    });
  }

  @Test
  void runWhenTheApplicationDefinesKeyIdsShouldUseThem() {
    KeyIds mine = KeyIds.of("the-application-own-secret");
    runner.withPropertyValues("ratelimiter.key-id-secret=" + SECRET)
        .withBean(KeyIds.class, () -> mine)
        .run(context -> {
          assertThat(context.getBean(KeyIds.class)).isSameAs(mine);
          assertThat(shownId(context)).isEqualTo(TestHmac.hex16("the-application-own-secret", KEY));
        });
  }
}
