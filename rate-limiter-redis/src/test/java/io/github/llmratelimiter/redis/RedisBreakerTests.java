package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.ManualTicker;
import io.lettuce.core.RedisException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The breaker in front of one Redis server, at the smallest settings the store accepts: a window of
 * one call and one probe in the half-open state, through many outages and recoveries on a driven
 * clock, and recorded from several threads at once.
 */
class RedisBreakerTests {

  private static final Duration RETRY = Duration.ofMillis(500);

  private final ManualTicker ticker = new ManualTicker();

  private RedisBreaker breaker(int window, int minimum, int probes) {
    return new RedisBreaker("", new RedisBreaker.Settings(50, window, minimum, probes), RETRY,
        FailurePolicy.FAIL_OPEN, ticker, new LongAdder());
  }

  @ParameterizedTest(name = "window {0}, minimum {1}, probes {2}")
  @CsvSource({"1, 1, 1", "2, 1, 1", "1, 1, 2", "4, 2, 1", "20, 10, 3"})
  void opensProbesAndClosesAgainThroughManyOutages(int window, int minimum, int probes) {
    RedisBreaker breaker = breaker(window, minimum, probes);
    for (int outage = 0; outage < 50; outage++) {
      for (int i = 0; i < minimum && !breaker.degraded(); i++) {
        assertThat(breaker.tryAcquirePermission()).as("outage %d, call %d before it opens", outage, i).isTrue();
        breaker.failed(new RedisException("down"), System.nanoTime());
      }
      assertThat(breaker.degraded()).as("open after %d failed calls (outage %d)", minimum, outage).isTrue();
      assertThat(breaker.tryAcquirePermission()).as("open: nothing passes before the retry").isFalse();

      ticker.advance(RETRY.plusMillis(1));
      assertThat(breaker.tryAcquirePermission()).as("a probe after the retry interval").isTrue();
      breaker.failed(new RedisException("still down"), System.nanoTime());
      for (int p = 1; p < probes && breaker.tryAcquirePermission(); p++) { // the probes fail: open again
        breaker.failed(new RedisException("still down"), System.nanoTime());
      }
      assertThat(breaker.tryAcquirePermission()).as("open again after failed probes").isFalse();

      ticker.advance(RETRY.plusMillis(1));
      for (int p = 0; p < probes; p++) {
        assertThat(breaker.tryAcquirePermission()).as("probe %d of %d", p, probes).isTrue();
        breaker.succeeded(System.nanoTime());
      }
      assertThat(breaker.degraded()).as("closed after %d answered probes (outage %d)", probes, outage).isFalse();
      for (int i = 0; i < window; i++) { // a full window of answered calls
        assertThat(breaker.tryAcquirePermission()).isTrue();
        breaker.succeeded(System.nanoTime());
      }
    }
  }

  @Test
  void repliesRecordedFromManyThreadsAtOnceLeaveTheBreakerWorking() throws Exception {
    RedisBreaker breaker = breaker(1, 1, 1);
    List<Thread> threads = new ArrayList<>();
    List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch go = new CountDownLatch(1);
    for (int t = 0; t < 4; t++) {
      int id = t;
      Thread thread = new Thread(() -> {
        try {
          go.await();
          for (int i = 0; i < 20_000; i++) {
            if (breaker.tryAcquirePermission()) {
              if ((i + id) % 3 == 0) {
                breaker.failed(new RedisException("down"), System.nanoTime());
              } else {
                breaker.succeeded(System.nanoTime());
              }
            }
            if (i % 100 == 0) {
              ticker.advance(RETRY.plusMillis(1));
            }
          }
        } catch (Throwable e) {
          failures.add(e);
        }
      });
      thread.start();
      threads.add(thread);
    }
    go.countDown();
    for (Thread t : threads) {
      t.join(TimeUnit.MINUTES.toMillis(2));
    }
    assertThat(failures).as("what the threads threw").isEmpty();
    for (int p = 0; p < 3 && breaker.degraded(); p++) { // open, then one probe
      ticker.advance(RETRY.plusMillis(1));
      if (breaker.tryAcquirePermission()) {
        breaker.succeeded(System.nanoTime());
      }
    }
    assertThat(breaker.degraded()).as("closed once Redis answers").isFalse();
  }
}
