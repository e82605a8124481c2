package io.github.llmratelimiter.benchmarks.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.benchmarks.inprocess.Bucket4jBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.FloorBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.GatewayLimiterBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.GuavaBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.HierarchicalLimiterBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.NaiveBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.Resilience4jBenchmark;
import io.github.llmratelimiter.benchmarks.inprocess.UpstreamBenchmark;
import io.github.llmratelimiter.benchmarks.redis.Bucket4jLettuceBenchmark;
import io.github.llmratelimiter.benchmarks.redis.EvalshaBenchmark;
import io.github.llmratelimiter.benchmarks.redis.RedisStoreBenchmark;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Benchmark;

class SuiteTests {

  private static final List<Class<?>> BENCHMARKS = List.of(
      GatewayLimiterBenchmark.class, HierarchicalLimiterBenchmark.class, Bucket4jBenchmark.class,
      Resilience4jBenchmark.class, GuavaBenchmark.class, NaiveBenchmark.class,
      FloorBenchmark.class, EvalshaBenchmark.class, RedisStoreBenchmark.class,
      Bucket4jLettuceBenchmark.class, UpstreamBenchmark.class);

  @Test
  void everyBenchmarkRunsInSomeRun() {
    for (String name : benchmarkNames()) {
      assertThat(Suite.RUNS).as(name).anyMatch(run -> matches(Suite.include(run, ""), name));
    }
  }

  @Test
  void ownKeyCasesRunOnlyWithTwoThreadsAndDeniedCasesOnlyWithOne() {
    String ownKey = GatewayLimiterBenchmark.class.getName() + ".allowedOwnKey";
    String denied = NaiveBenchmark.class.getName() + ".deniedTenThousandKeys";
    for (Suite.Run run : Suite.RUNS) {
      String include = Suite.include(run, "");
      assertThat(matches(include, run.threads() == 1 ? ownKey : denied)).as(run.title()).isFalse();
    }
  }

  @Test
  void redisRunsHaveOneAndEightThreadsAndTheHotKeyInBoth() {
    String hot = RedisStoreBenchmark.class.getName() + ".allowedOneKey";
    String peer = Bucket4jLettuceBenchmark.class.getName() + ".allowedOneKey";
    String thousand = RedisStoreBenchmark.class.getName() + ".allowedThousandKeys";
    for (int threads : new int[] {1, 8}) {
      assertThat(Suite.RUNS).anyMatch(run -> run.part() == Suite.Part.REDIS
          && run.threads() == threads && matches(Suite.include(run, ""), hot)
          && matches(Suite.include(run, ""), peer));
    }
    assertThat(Suite.RUNS).noneMatch(run -> run.threads() == 1 && matches(run.include(), thousand));
    assertThat(Suite.RUNS).noneMatch(run -> run.part() != Suite.Part.REDIS
        && matches(run.include(), hot));
  }

  @Test
  void upstreamCasesRunInProcessWithOneThreadAndTwo() {
    String room = UpstreamBenchmark.class.getName() + ".modelTokensThroughEmptyRoom";
    for (int threads : new int[] {1, 2}) {
      assertThat(Suite.RUNS).as("%d thread(s)", threads).anyMatch(run -> run.threads() == threads
          && run.part() == Suite.Part.IN_PROCESS && matches(Suite.include(run, "Upstream"), room));
    }
  }

  @Test
  void onlyNarrowsEachRun() {
    Suite.Run one = Suite.RUNS.get(0);
    String pattern = Suite.include(one, "Bucket4j");
    assertThat(matches(pattern, Bucket4jBenchmark.class.getName() + ".allowedOneKey")).isTrue();
    assertThat(matches(pattern, Bucket4jBenchmark.class.getName() + ".allowedOwnKey")).isFalse();
    assertThat(matches(pattern, GuavaBenchmark.class.getName() + ".allowedOneKey")).isFalse();
  }

  private static boolean matches(String include, String name) {
    return Pattern.compile(include).matcher(name).find(); // as JMH selects benchmarks
  }

  private static List<String> benchmarkNames() {
    List<String> names = new ArrayList<>();
    for (Class<?> type : BENCHMARKS) {
      for (Method m : type.getMethods()) {
        if (m.isAnnotationPresent(Benchmark.class)) {
          names.add(type.getName() + "." + m.getName());
        }
      }
    }
    assertThat(names).hasSizeGreaterThan(25);
    return names;
  }
}
