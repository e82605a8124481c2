package io.github.llmratelimiter.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.core.BucketLimit;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Decision;
import io.github.llmratelimiter.core.ManualTicker;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.core.StoreAdministration;
import io.github.llmratelimiter.core.WindowLimit;
import io.lettuce.core.api.sync.RedisCommands;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The state string of layout 2 (see {@code lib.lua}): large logs, offsets rebased or widened, a
 * clock that goes back, and keys of layout 1 or of no layout, which are never read as state.
 */
class StateLayoutTests {

  private final RedisCommands<String, String> redis = TestRedis.standaloneCommands();

  @Test
  void aLargeLimitAdmitsExactlyItsLimitAndFreesOneSlotPerExpiredAdmission() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    Budget big = new Budget("big", WindowLimit.perMinute(10_000), null);
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
        .build()) {
      for (int i = 0; i < 10_000; i++) {
        assertThat(store.acquire(big, "t", 1, Composition.SEQUENTIAL).remaining())
            .isEqualTo(10_000 - 1 - i);
        ticker.advance(Duration.ofMillis(5)); // 10,000 admissions in 50 s
      }
      Decision full = store.acquire(big, "t", 1, Composition.SEQUENTIAL);
      assertThat(full.reason()).isEqualTo(Reason.RPM_LIMIT);
      assertThat(full.retryAfterMs()).isEqualTo(10_000L); // the first admission, 50 s ago
      ticker.advance(Duration.ofMillis(10_000)); // exactly a window after the first
      assertThat(store.acquire(big, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      assertThat(store.acquire(big, "t", 1, Composition.SEQUENTIAL).reason())
          .isEqualTo(Reason.RPM_LIMIT);
      ticker.advance(Duration.ofMillis(5)); // the second leaves
      assertThat(store.acquire(big, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      StoredState state = StoredState.read(prefix + ":{t}:big:t:s");
      // a minute of nanoseconds is more than 2^31: entries take 8 bytes; the log is written in
      // place, so the two that left are still stored, before the first entry in the window
      assertThat(state.width()).isEqualTo(8);
      assertThat(state.admissions()).hasSize(10_000).isSorted();
      assertThat(state.first()).isEqualTo(2);
      assertThat(admin(store).inspect(big, "t").orElseThrow().windowUsed()).isEqualTo(10_000);
    }
  }

  @Test
  void aLargeLogWrittenInPlaceDecidesAsInMemoryAndDropsWhatLeftOnceItIsHalfTheLog() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    // 2 s of nanoseconds is below 2^31: 4-byte entries, more than 4 KB from about 1,000 on
    Budget big = Budget.of("big", new WindowLimit(3_000, Duration.ofSeconds(2)),
        new BucketLimit(2_000, 1_000));
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
            .build()) {
      long largest = 0;
      boolean inPlace = false;
      boolean compacted = false;
      for (int i = 0; i < 12_000; i++) {
        ticker.advanceNanos(i % 7 == 0 ? 3_000_000 : 100_000); // filling, then leaving, faster
        assertThat(store.acquire(big, "t", 1, Composition.SEQUENTIAL)).as("call %d", i)
            .isEqualTo(memory.acquire(big, "t", 1, Composition.SEQUENTIAL));
        if (i % 50 == 0) {
          StoredState state = StoredState.read(prefix + ":{t}:big:t:s");
          inPlace |= state.first() > 0;
          compacted |= state.offsets().length < largest && largest > 1_000;
          largest = Math.max(largest, state.offsets().length);
          assertThat(state.first()).isLessThanOrEqualTo(state.offsets().length / 2 + 1);
          for (long t : state.admissions()) {
            assertThat(t).isGreaterThan(ticker.read() - Duration.ofSeconds(2).toNanos());
          }
        }
      }
      assertThat(inPlace).isTrue();
      assertThat(compacted).isTrue();
      assertThat(store.errorCount()).isZero();
    }
  }

  @Test
  void offsetsOfAShortWindowTakeFourBytesAndAreRebasedAsTimeGoesOn() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    // a window of 2 s in nanoseconds is below 2^31: offsets in 4 bytes, which pass 2^32 - 1 (4.3 s)
    Budget b = Budget.of("short", new WindowLimit(3, Duration.ofSeconds(2)), new BucketLimit(2, 1));
    try (RateLimitStore memory = RateLimitStore.inMemory(ticker);
        RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
            .build()) {
      double firstBase = Double.NaN;
      boolean rebased = false;
      for (int i = 0; i < 200; i++) {
        ticker.advance(Duration.ofMillis(i % 4 == 0 ? 100 : 700)); // never a whole window idle
        assertThat(store.acquire(b, "t", 0.5, Composition.SEQUENTIAL)).as("call %d", i)
            .isEqualTo(memory.acquire(b, "t", 0.5, Composition.SEQUENTIAL));
        StoredState state = StoredState.read(prefix + ":{t}:short:t:s");
        assertThat(state.width()).isEqualTo(4);
        assertThat(state.admissions()).isSorted();
        for (long t : state.admissions()) {
          assertThat(t).isGreaterThan(ticker.read() - Duration.ofSeconds(2).toNanos());
        }
        if (Double.isNaN(firstBase)) {
          firstBase = state.base();
        }
        rebased |= state.base() != firstBase;
      }
      assertThat(rebased).isTrue();
    }
  }

  @Test
  void aClockThatGoesBackNeverUnsortsTheLogNorOverAdmits() {
    AtomicLong nanos = new AtomicLong(ManualTicker.ORIGIN);
    String prefix = TestRedis.freshPrefix();
    Budget b = Budget.of("back", new WindowLimit(3, Duration.ofSeconds(10)), new BucketLimit(5, 1));
    try (RedisRateLimitStore store = TestRedis.standalone(nanos::get).keyPrefix(prefix)
        .hashKeys(false).build()) {
      nanos.addAndGet(Duration.ofSeconds(20).toNanos());
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      nanos.addAndGet(-Duration.ofSeconds(5).toNanos()); // the clock steps back 5 s
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).allowed()).isTrue();
      Decision full = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
      assertThat(full.reason()).isEqualTo(Reason.RPM_LIMIT);
      // every admission counts from the latest time seen (20 s): it leaves 10 s after it
      assertThat(full.retryAfterMs()).isEqualTo(15_000L);
      StoredState state = StoredState.read(prefix + ":{t}:back:t:s");
      long latest = ManualTicker.ORIGIN + Duration.ofSeconds(20).toNanos();
      assertThat(state.admissions()).containsExactly(latest, latest, latest);
      // the bucket does not refill while the clock is behind its last refill
      assertThat(state.tokens()).isEqualTo(2.0);
      assertThat(state.refilledAt()).isEqualTo((double) latest);
      nanos.addAndGet(Duration.ofSeconds(14).toNanos()); // 1 s before the admissions leave
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).reason())
          .isEqualTo(Reason.RPM_LIMIT);
      nanos.addAndGet(Duration.ofSeconds(1).toNanos());
      Decision again = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
      assertThat(again.allowed()).isTrue();
      assertThat(again.remaining()).isEqualTo(2);
      assertThat(store.errorCount()).isZero();
    }
  }

  @Test
  void aStateWithoutTheMonitoringMarkIsReadAndWrittenBackWithIt() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    Budget b = new Budget("mark", new WindowLimit(3, Duration.ofMinutes(1)), null, null);
    long now = ticker.read();
    // the header of 29 bytes, the width in its first byte, then two admissions at now
    ByteBuffer value = ByteBuffer.allocate(29 + 8).order(ByteOrder.LITTLE_ENDIAN);
    value.put((byte) 4).putDouble(0).putDouble(now).putDouble(now).putInt(0).putInt(0).putInt(0);
    StoredState.write(prefix + ":{t}:mark:t:s", value.array());
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
        .build()) {
      Decision d = store.acquire(b, "t", 1, Composition.SEQUENTIAL);
      assertThat(d.allowed()).isTrue();
      assertThat(d.remaining()).isZero(); // the two stored admissions count
      StoredState state = StoredState.read(prefix + ":{t}:mark:t:s");
      assertThat(state.admissions()).containsExactly(now, now, now);
      assertThat(state.mark()).isPositive();
      assertThat(store.acquire(b, "t", 1, Composition.SEQUENTIAL).reason())
          .isEqualTo(Reason.RPM_LIMIT);
    }
  }

  @Test
  void keysOfLayoutOneAndForeignValuesAreNeverReadAsState() {
    ManualTicker ticker = new ManualTicker();
    String prefix = TestRedis.freshPrefix();
    Budget b = Budget.of("old", new WindowLimit(2, Duration.ofMinutes(1)), new BucketLimit(5, 1));
    // what layout 1 left: a full window log and an empty bucket, with no expiry
    redis.zadd(prefix + ":{t}:old:t:w", 1.0, "1");
    redis.zadd(prefix + ":{t}:old:t:w", 2.0, "2");
    redis.set(prefix + ":{t}:old:t:b", "0 2");
    redis.set(prefix + ":{u}:old:u:b", "0 2");
    // a value of no layout where a state belongs
    StoredState.write(prefix + ":{v}:old:v:s", "not a state".getBytes(StandardCharsets.UTF_8));
    try (RedisRateLimitStore store = TestRedis.standalone(ticker).keyPrefix(prefix).hashKeys(false)
        .build()) {
      assertThat(admin(store).trackedKeys(b)).isZero(); // counted by decisions: none made yet
      assertThat(admin(store).inspect(b, "t")).isEmpty();
      assertThat(admin(store).top(b, 10)).isEmpty(); // v's value reads as a fresh state
      for (String key : new String[] {"t", "u", "v"}) {
        Decision d = store.acquire(b, key, 1, Composition.SEQUENTIAL);
        assertThat(d.allowed()).as(key).isTrue();
        assertThat(d.remaining()).as(key).isEqualTo(1);
      }
      assertThat(StoredState.read(prefix + ":{v}:old:v:s").admissions())
          .containsExactly(ticker.read());
      assertThat(admin(store).trackedKeys(b)).isEqualTo(3);
      assertThat(admin(store).reset(b, "t")).isTrue();
      assertThat(redis.exists(prefix + ":{t}:old:t:w", prefix + ":{t}:old:t:b")).isEqualTo(2);
      assertThat(store.errorCount()).isZero();
    }
  }

  /** The store's administration, which every store under test here offers. */
  private static StoreAdministration admin(RateLimitStore store) {
    return store.administration().orElseThrow();
  }
}
