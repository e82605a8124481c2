package io.github.llmratelimiter.benchmarks.inprocess;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.Reason;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Runs every benchmark method a few thousand times outside JMH (no timing): each case must get the
 * answer its name promises, or the suite would fail mid-run.
 */
class BenchmarkCasesTests {

  private static final int CALLS = 20_000;

  @ParameterizedTest
  @EnumSource(Composition.class)
  void gatewayLimiterCasesGetTheirAnswers(Composition composition) throws Exception {
    GatewayLimiterBenchmark b = new GatewayLimiterBenchmark();
    b.composition = composition;
    b.setUp();
    assertThat(callAll(b, keys(thread(0, 1)))).hasSize(12);
  }

  @ParameterizedTest
  @EnumSource(Composition.class)
  void hierarchicalLimiterCasesGetTheirAnswers(Composition composition) throws Exception {
    HierarchicalLimiterBenchmark b = new HierarchicalLimiterBenchmark();
    b.composition = composition;
    b.setUp();
    assertThat(callAll(b, keys(thread(1, 2)))).hasSize(9);
  }

  @Test
  void peerCasesGetTheirAnswers() throws Exception {
    Bucket4jBenchmark bucket4j = new Bucket4jBenchmark();
    bucket4j.setUp();
    Bucket4jBenchmark.Own bucket = new Bucket4jBenchmark.Own();
    bucket.setUp(thread(0, 1));
    bucket.build();
    assertThat(callAll(bucket4j, bucket)).hasSize(5);

    Resilience4jBenchmark resilience4j = new Resilience4jBenchmark();
    resilience4j.setUp();
    Resilience4jBenchmark.Own resilience4jLimiter = new Resilience4jBenchmark.Own();
    resilience4jLimiter.setUp(thread(0, 1));
    resilience4jLimiter.build();
    assertThat(callAll(resilience4j, resilience4jLimiter)).hasSize(5);

    GuavaBenchmark guava = new GuavaBenchmark();
    guava.setUp();
    GuavaBenchmark.Own guavaLimiter = new GuavaBenchmark.Own();
    guavaLimiter.setUp(thread(0, 1));
    guavaLimiter.build();
    assertThat(callAll(guava, guavaLimiter)).hasSize(5);

    NaiveBenchmark naive = new NaiveBenchmark();
    naive.setUp();
    assertThat(callAll(naive, keys(thread(1, 2)))).hasSize(5);
  }

  @Test
  void upstreamCasesGetTheirAnswersWithoutAnyCallWaiting() throws Exception {
    UpstreamBenchmark b = new UpstreamBenchmark();
    b.setUp();
    assertThat(callAll(b, keys(thread(0, 1)))).containsExactlyInAnyOrder(
        "windowBucketWithoutUpstream", "windowBucketWithUpstream", "windowBucketWithTurn",
        "windowBucketThroughEmptyRoom", "modelTokensWithoutUpstream", "modelTokensWithUpstream",
        "modelTokensWithTurn", "modelTokensThroughEmptyRoom");
    b.tearDown(); // throws if a call waited
  }

  @Test
  void checksThrowOnTheWrongAnswer() {
    Decision denied = Decision.retryableDeny(Reason.RPM_LIMIT, 0, 5, 5, "rpm");
    Decision allowed = Decision.allow(3, 0, "rpm");
    assertThatThrownBy(() -> Check.allowed(denied))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("RPM_LIMIT");
    assertThatThrownBy(() -> Check.denied(allowed, Reason.RPM_LIMIT))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> Check.denied(denied, Reason.BURST_LIMIT))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> Check.allowed(false)).isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> Check.denied(true)).isInstanceOf(IllegalStateException.class);
    assertThat(Check.allowed(allowed)).isSameAs(allowed);
    assertThat(Check.denied(denied, Reason.RPM_LIMIT)).isSameAs(denied);
  }

  @Test
  void threadsWalkEveryKeyFromTheirOwnShare() {
    ThreadKeys first = keys(thread(0, 2));
    ThreadKeys second = keys(thread(1, 2));
    List<Integer> walk = new ArrayList<>();
    for (int i = 0; i < Limits.KEY_COUNT + 1; i++) {
      walk.add(first.next());
    }
    assertThat(walk.subList(0, 3)).containsExactly(0, 1, 2);
    assertThat(walk.subList(0, Limits.KEY_COUNT)).doesNotHaveDuplicates()
        .allMatch(i -> i >= 0 && i < Limits.KEY_COUNT);
    assertThat(walk.get(Limits.KEY_COUNT)).isZero();
    assertThat(second.next()).isEqualTo(Limits.KEY_COUNT / 2);
    assertThat(second.ownKey).isEqualTo("tenant-1");
  }

  /** Calls each benchmark method of {@code b} {@value #CALLS} times; returns the methods called. */
  private static List<String> callAll(Object b, Object threadKeys) throws Exception {
    List<String> called = new ArrayList<>();
    for (Method m : b.getClass().getMethods()) {
      if (!m.isAnnotationPresent(Benchmark.class)) {
        continue;
      }
      Object[] args = m.getParameterCount() == 0 ? new Object[0] : new Object[] {threadKeys};
      for (int i = 0; i < CALLS; i++) {
        try {
          m.invoke(b, args);
        } catch (InvocationTargetException e) {
          throw new AssertionError(m.getName() + " failed on call " + i, e.getCause());
        }
      }
      called.add(m.getName());
    }
    return called;
  }

  private static ThreadKeys keys(ThreadParams thread) {
    ThreadKeys keys = new ThreadKeys();
    keys.setUp(thread);
    return keys;
  }

  private static ThreadParams thread(int index, int count) {
    return new ThreadParams(index, count, 0, 1, 0, 1, index, count, index, count);
  }
}
