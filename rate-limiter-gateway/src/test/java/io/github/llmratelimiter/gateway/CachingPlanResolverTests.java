package io.github.llmratelimiter.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.PlanAssignments;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The default plan resolver on a store that counts its reads: a cached plan asks the store nothing
 * until half the refresh interval, is read again in the background then, and is never used once
 * the whole interval has passed; time moves only on the manual ticker.
 */
class CachingPlanResolverTests {

  private static final Duration REFRESH = Duration.ofSeconds(5);
  private static final String KEY = "sk-resolver-0123456789";

  private final ManualTicker ticker = new ManualTicker();
  private final RateLimitStore memory = RateLimitStore.inMemory(ticker);
  private final PlanAssignments plans = memory.planAssignments().orElseThrow();
  private final CountingPlans store = new CountingPlans(plans);
  private final RateLimitPolicies policies = RateLimitPolicies.builder(Composition.SEQUENTIAL)
      .policy("default", KeyScope.API_KEY, new Budget("default", WindowLimit.perMinute(60), null))
      .plan("free").plan("pro").defaultPlan("free").build();
  private final List<RateLimitPlanResolver> resolvers = new ArrayList<>();

  @AfterEach
  void close() {
    resolvers.forEach(RateLimitPlanResolver::close);
    memory.close();
  }

  private CachingPlanResolver resolver(PlanAssignments on, int maxKeys) {
    CachingPlanResolver r = new CachingPlanResolver(on, policies, ticker, REFRESH, maxKeys);
    resolvers.add(r);
    return r;
  }

  /** Waits for a condition that a background read makes true, at most 10 s (no clock moves). */
  private static void await(BooleanSupplier condition) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (!condition.getAsBoolean()) {
      assertThat(System.nanoTime()).as("condition within 10 s").isLessThan(deadline);
      Thread.onSpinWait(); // the background read completes meanwhile; no clock moves
    }
  }

  @Test
  void aCachedPlanAsksTheStoreNothingUntilHalfTheRefreshThenIsReadInTheBackground() throws Exception {
    CachingPlanResolver resolver = resolver(store, 100);
    assertThat(resolver.plan(KEY)).isEqualTo("free");
    assertThat(store.reads.get()).isEqualTo(1);
    plans.assignPlan(KEY, "pro"); // another instance assigns
    for (int i = 0; i < 1000; i++) {
      assertThat(resolver.plan(KEY)).isEqualTo("free");
      assertThat(resolver.planAsync(KEY).toCompletableFuture().isDone()).isTrue();
    }
    ticker.advance(REFRESH.dividedBy(2).minusNanos(1));
    assertThat(resolver.plan(KEY)).isEqualTo("free");
    assertThat(store.reads.get()).as("no read before half the refresh").isEqualTo(1);
    ticker.advanceNanos(1);
    assertThat(resolver.plan(KEY)).as("the cached plan answers while it is read again").isEqualTo("free");
    await(() -> store.reads.get() == 2 && resolver.plan(KEY).equals("pro"));
    assertThat(store.reads.get()).isEqualTo(2);
  }

  @Test
  void aPlanReadTheWholeRefreshAgoIsNeverUsed() {
    CachingPlanResolver resolver = resolver(store, 100);
    store.background.set(false); // background reads are lost: only the bound remains
    assertThat(resolver.plan(KEY)).isEqualTo("free");
    plans.assignPlan(KEY, "pro");
    ticker.advance(REFRESH.minusNanos(1));
    assertThat(resolver.plan(KEY)).isEqualTo("free");
    ticker.advanceNanos(1);
    assertThat(resolver.plan(KEY)).isEqualTo("pro");
    assertThat(resolver.planAsync(KEY).toCompletableFuture().join()).isEqualTo("pro");
  }

  @Test
  void anAssignmentOnOneInstanceIsSeenAtOnceThereAndWithinTheRefreshOnAnother() {
    CachingPlanResolver here = resolver(store, 100);
    CountingPlans otherStore = new CountingPlans(plans);
    otherStore.background.set(false); // only the bound: no background read helps
    CachingPlanResolver there = resolver(otherStore, 100);
    assertThat(there.plan(KEY)).isEqualTo("free");
    here.assign(KEY, "pro");
    assertThat(here.plan(KEY)).isEqualTo("pro");
    assertThat(here.assigned(KEY)).isTrue();
    assertThat(plans.assignedPlan(KEY)).hasValue("pro");
    assertThat(there.plan(KEY)).isEqualTo("free");
    ticker.advance(REFRESH);
    assertThat(there.plan(KEY)).isEqualTo("pro");
    here.assign(KEY, null);
    assertThat(here.plan(KEY)).isEqualTo("free");
    assertThat(here.assigned(KEY)).isFalse();
    assertThat(plans.assignedPlan(KEY)).isEmpty();
    assertThatThrownBy(() -> here.assign(KEY, "gold"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'gold'");
    assertThat(plans.assignedPlan(KEY)).isEmpty();
  }

  @Test
  void anAssignmentToAPlanNoLongerConfiguredCountsAsTheDefault() {
    plans.assignPlan(KEY, "gold");
    CachingPlanResolver resolver = resolver(store, 100);
    assertThat(resolver.plan(KEY)).isEqualTo("free");
    assertThat(resolver.assigned(KEY)).isFalse();
  }

  @Test
  void whileTheStoreFailsAKeyKeepsThePlanLastReadOrGetsTheDefault() {
    CachingPlanResolver resolver = resolver(store, 100);
    plans.assignPlan(KEY, "pro");
    assertThat(resolver.plan(KEY)).isEqualTo("pro");
    store.failing.set(true);
    ticker.advance(REFRESH.multipliedBy(3));
    assertThat(resolver.plan(KEY)).isEqualTo("pro");
    assertThat(resolver.plan("sk-never-seen-0123456789")).isEqualTo("free");
    plans.assignPlan("sk-never-seen-0123456789", "pro");
    store.failing.set(false);
    assertThat(resolver.plan("sk-never-seen-0123456789")).as("read again once the store answers")
        .isEqualTo("pro");
  }

  @Test
  void aMissReadAsynchronouslyWaitsForTheStoresReplyWithoutBlocking() throws Exception {
    CachingPlanResolver resolver = resolver(store, 100);
    plans.assignPlan(KEY, "pro");
    CompletableFuture<Optional<String>> reply = new CompletableFuture<>();
    store.nextReply = reply;
    CompletableFuture<String> plan = resolver.planAsync(KEY).toCompletableFuture();
    assertThat(plan).as("the store has not answered").isNotDone();
    assertThat(resolver.planAsync(KEY).toCompletableFuture()).as("one read per key").isNotDone();
    assertThat(store.asyncReads.get()).isEqualTo(1);
    assertThat(store.reads.get()).as("nothing read on the calling thread").isZero();
    reply.complete(Optional.of("pro"));
    assertThat(plan.get(10, TimeUnit.SECONDS)).isEqualTo("pro");
    assertThat(resolver.planAsync(KEY).toCompletableFuture().getNow(null)).as("cached").isEqualTo("pro");
  }

  @Test
  void anAsynchronousReadTheStoreFailsGivesThePlanLastReadOrTheDefault() throws Exception {
    CachingPlanResolver resolver = resolver(store, 100);
    plans.assignPlan(KEY, "pro");
    assertThat(resolver.plan(KEY)).isEqualTo("pro");
    ticker.advance(REFRESH);
    store.nextReply = CompletableFuture.failedFuture(new IllegalStateException("no answer"));
    assertThat(resolver.planAsync(KEY).toCompletableFuture().get(10, TimeUnit.SECONDS)).isEqualTo("pro");
    store.nextReply = CompletableFuture.failedFuture(new IllegalStateException("no answer"));
    assertThat(resolver.planAsync("sk-never-seen-0123456789").toCompletableFuture()
        .get(10, TimeUnit.SECONDS)).isEqualTo("free");
  }

  @Test
  void theCacheHoldsAtMostMaxKeys() {
    CachingPlanResolver resolver = resolver(store, 3);
    for (int i = 0; i < 50; i++) {
      resolver.plan("sk-many-" + i + "-0123456789");
      assertThat(resolver.cachedKeys()).isEqualTo(Math.min(i + 1, 3));
    }
  }

  @Test
  void invalidArgumentsAreNamed() {
    assertThatThrownBy(() -> new CachingPlanResolver(store, policies, ticker, Duration.ZERO, 10))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("refresh");
    assertThatThrownBy(() -> new CachingPlanResolver(store, policies, ticker, REFRESH, 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxKeys");
  }

  /**
   * A store's plan assignments that count their reads, can fail them, can lose asynchronous (background) reads, and
   * can answer the next asynchronous read with a reply the test completes.
   */
  private static final class CountingPlans implements PlanAssignments {

    private final PlanAssignments delegate;

    final AtomicInteger reads = new AtomicInteger();
    final AtomicInteger asyncReads = new AtomicInteger();
    final AtomicBoolean failing = new AtomicBoolean();
    final AtomicBoolean background = new AtomicBoolean(true);
    volatile CompletableFuture<Optional<String>> nextReply;

    CountingPlans(PlanAssignments delegate) {
      this.delegate = delegate;
    }

    @Override
    public Optional<String> assignedPlan(String key) {
      reads.incrementAndGet();
      if (failing.get()) {
        throw new IllegalStateException("the store does not answer");
      }
      return delegate.assignedPlan(key);
    }

    @Override
    public CompletionStage<Optional<String>> assignedPlanAsync(String key) {
      asyncReads.incrementAndGet();
      CompletableFuture<Optional<String>> reply = nextReply;
      if (reply != null) {
        nextReply = null;
        return reply;
      }
      if (!background.get()) {
        return new CompletableFuture<>(); // never answered: background reads are lost
      }
      return PlanAssignments.super.assignedPlanAsync(key); // reads through assignedPlan, counted
    }

    @Override
    public void assignPlan(String key, String plan) {
      delegate.assignPlan(key, plan);
    }
  }
}
