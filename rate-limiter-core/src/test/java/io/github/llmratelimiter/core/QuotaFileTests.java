package io.github.llmratelimiter.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class QuotaFileTests {

  private static final Instant START = Instant.parse("2025-03-14T10:00:00Z");
  private static final long DAY_END = Instant.parse("2025-03-15T00:00:00Z").toEpochMilli();
  private static final long MONTH_END = Instant.parse("2025-04-01T00:00:00Z").toEpochMilli();

  private static final QuotaLimit DAILY =
      QuotaLimit.of("daily", QuotaUnit.REQUESTS, 4, QuotaPeriod.DAY).withThresholds(50, 100);
  private static final QuotaLimit MONTHLY =
      QuotaLimit.of("monthly", QuotaUnit.TOKENS, 1_000_000, QuotaPeriod.MONTH);
  private static final Budget CHAT =
      new Budget("chat", null, null, null, null, List.of(DAILY, MONTHLY), null);

  @TempDir Path dir;

  private final AtomicLong nowMs = new AtomicLong(START.toEpochMilli());
  private final InstantSource wallClock = () -> Instant.ofEpochMilli(nowMs.get());
  private final List<RateLimitStore> stores = new ArrayList<>();

  @AfterEach
  void closeStores() {
    stores.forEach(RateLimitStore::close);
  }

  private InMemoryStore newStore() {
    MaintenanceScheduler never = task -> new CompletableFuture<Void>();
    RateLimitStore store = RateLimitStore.inMemory(new ManualTicker(), wallClock, 1_000, never);
    stores.add(store);
    return (InMemoryStore) store;
  }

  private static QuotaPersistence persistence(RateLimitStore store) {
    return store.quotaPersistence().orElseThrow();
  }

  private static Reservation call(RateLimitStore store, Budget budget, String key, long tokens) {
    return store.reserve(List.of(budget), List.of(key), 1, Consumption.ofCall(tokens, 0),
        Composition.RESERVE_COMMIT);
  }

  private static Map<QuotaBook.Id, QuotaFile.Snap> counters(InMemoryStore store, long nowMs) {
    Map<QuotaBook.Id, QuotaFile.Snap> all = new HashMap<>();
    for (QuotaFile.Snap s : new QuotaFile(store.quotaBook(), () -> Instant.EPOCH).snapshot(nowMs)) {
      all.put(s.id(), s);
    }
    return all;
  }

  private Path saved() throws IOException {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-1", 10);
    call(store, CHAT, "key-2", 20);
    Path file = dir.resolve("quotas.bin");
    assertThat(persistence(store).save(file)).isEqualTo(4);
    return file;
  }

  @Test
  void whenSavedAndLoaded_thenCountersThresholdsAndPeriodEndsSurvive() throws IOException {
    InMemoryStore before = newStore();
    // keys and names of any characters: separators, unpaired surrogates, empty-looking ones
    String odd = "sk-\u0000/\n\"|\uD800 ü 🙂";
    call(before, CHAT, "key-1", 100);
    assertThat(call(before, CHAT, "key-1", 200).quotas().get(0).crossed()).containsExactly(50);
    call(before, CHAT, odd, 7);
    Path file = dir.resolve("quotas.bin");

    int written = persistence(before).save(file);
    InMemoryStore after = newStore();
    int read = persistence(after).load(file);

    assertThat(written).isEqualTo(4);
    assertThat(read).isEqualTo(4);
    assertThat(counters(after, nowMs.get())).isEqualTo(counters(before, nowMs.get()));
    List<QuotaStatus> key1 = after.administration().orElseThrow().quotas(CHAT, "key-1");
    assertThat(key1).extracting(QuotaStatus::used).containsExactly(2L, 300L);
    assertThat(key1).extracting(QuotaStatus::periodEndMs).containsExactly(DAY_END, MONTH_END);
    assertThat(after.administration().orElseThrow().quotas(CHAT, odd))
        .extracting(QuotaStatus::used).containsExactly(1L, 7L);
    // 50 % was reported before the restart: not again; 100 % is still to come
    assertThat(call(after, CHAT, "key-1", 1).quotas().get(0).crossed()).isEmpty();
    assertThat(call(after, CHAT, "key-1", 1).quotas().get(0).crossed()).containsExactly(100);
  }

  @Test
  void whenKeySpentItsDailyQuotaBeforeRestart_thenItIsStillDeniedAfter() throws IOException {
    InMemoryStore before = newStore();
    for (int i = 0; i < 4; i++) {
      assertThat(call(before, CHAT, "key-1", 1).decision().allowed()).isTrue();
    }
    assertThat(call(before, CHAT, "key-1", 1).decision().allowed()).isFalse();
    Path file = dir.resolve("quotas.bin");
    persistence(before).save(file);
    nowMs.addAndGet(3_600_000L);

    InMemoryStore after = newStore();
    persistence(after).load(file);
    Decision denied = call(after, CHAT, "key-1", 1).decision();
    Decision other = call(after, CHAT, "key-2", 1).decision();

    assertThat(denied.allowed()).isFalse();
    assertThat(denied.reason()).isEqualTo(Reason.QUOTA_EXCEEDED);
    assertThat(denied.retryAfterMs()).isEqualTo(DAY_END - nowMs.get());
    assertThat(other.allowed()).isTrue();
    nowMs.set(DAY_END);
    assertThat(call(after, CHAT, "key-1", 1).decision().allowed()).isTrue();
  }

  @Test
  void whenFileIsMissing_thenLoadReadsNothing() {
    InMemoryStore store = newStore();

    assertThat(persistence(store).load(dir.resolve("absent.bin"))).isZero();
    assertThat(store.quotaBook().size()).isZero();
  }

  @Test
  void whenAByteIsFlipped_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x10;
    Files.write(file, bytes);

    assertRefused(file, "is corrupt or truncated (its CRC-32 does not match its content)");
  }

  @Test
  void whenTheChecksumIsFlipped_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 1] ^= 0x01;
    Files.write(file, bytes);

    assertRefused(file, "is corrupt or truncated (its CRC-32 does not match its content)");
  }

  @Test
  void whenTruncated_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(bytes, bytes.length - 9));

    assertRefused(file, "is corrupt or truncated (its CRC-32 does not match its content)");
  }

  @Test
  void whenTruncatedInTheHeader_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(bytes, 10));

    assertRefused(file, "is truncated");
  }

  @Test
  void whenTruncatedAfterTheVersion_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, Arrays.copyOf(bytes, 20));

    assertRefused(file, "is truncated (20 bytes)");
  }

  @Test
  void whenEmpty_thenLoadFailsNamingTheFile() throws IOException {
    Path file = dir.resolve("quotas.bin");
    Files.write(file, new byte[0]);

    assertRefused(file,
        "is not a quota file of this rate limiter (it does not start with \"LRLQUOTA\"; 0 bytes)");
  }

  @Test
  void whenTheMagicIsWrong_thenLoadFailsNamingTheFile() throws IOException {
    Path file = dir.resolve("quotas.bin");
    Files.writeString(file, "{\"counters\": []}\n");

    assertRefused(file,
        "is not a quota file of this rate limiter (it does not start with \"LRLQUOTA\"; 17 bytes)");
  }

  @Test
  void whenTheVersionIsAnother_thenLoadFailsNamingTheFile() throws IOException {
    Path file = saved();
    byte[] bytes = Files.readAllBytes(file);
    ByteBuffer.wrap(bytes).putInt(QuotaFile.MAGIC.length, 2);
    Files.write(file, bytes);

    assertRefused(file,
        "has format version 2, but this version of the rate limiter reads version 1 only");
  }

  private void assertRefused(Path file, String problem) {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-9", 1);

    assertThatThrownBy(() -> persistence(store).load(file))
        .isInstanceOf(QuotaFileException.class)
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("Quota file '" + file + "' " + problem + ". Restore a good copy of it, or"
            + " remove it to start with every quota unused.")
        .satisfies(e -> assertThat(((QuotaFileException) e).file()).isEqualTo(file));
    // refused whole: the store keeps what it had, nothing more
    assertThat(store.quotaBook().size()).isEqualTo(2);
  }

  @Test
  void whenPeriodsAreLongOver_thenSaveSkipsThemAndLoadDropsThem() throws IOException {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-1", 5);
    Path file = dir.resolve("quotas.bin");
    persistence(store).save(file);
    // the day's counters are kept a day past the day's end, then neither written nor read
    nowMs.set(DAY_END + QuotaBook.RETENTION_MS);
    Path later = dir.resolve("later.bin");

    int written = persistence(store).save(later);
    InMemoryStore fresh = newStore();
    int read = persistence(fresh).load(file);

    assertThat(written).isEqualTo(1);
    assertThat(read).isEqualTo(1);
    assertThat(counters(fresh, 0).keySet()).extracting(QuotaBook.Id::quota)
        .containsExactly(MONTHLY.stateId());
    assertThat(persistence(newStore()).load(later)).isEqualTo(1);
  }

  @Test
  void whenPeriodEndedLessThanADayAgo_thenItIsKept() throws IOException {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-1", 5);
    nowMs.set(DAY_END + QuotaBook.RETENTION_MS - 1);

    assertThat(persistence(store).save(dir.resolve("quotas.bin"))).isEqualTo(2);
    assertThat(persistence(newStore()).load(dir.resolve("quotas.bin"))).isEqualTo(2);
  }

  @Test
  void whenAWriteFailsPartWay_thenTheGoodFileIsLeftAsItWasAndNoTemporaryFileRemains()
      throws IOException {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-1", 5);
    Path file = dir.resolve("quotas.bin");
    persistence(store).save(file);
    byte[] good = Files.readAllBytes(file);
    for (int i = 0; i < 100; i++) {
      call(store, CHAT, "key-" + i, 5);
    }
    QuotaFile quotaFile = (QuotaFile) persistence(store);

    assertThatThrownBy(() -> quotaFile.save(file, out -> new FailingAfter(out, 300)))
        .isInstanceOf(IOException.class)
        .hasMessage("disk full after 300 bytes");
    assertThat(Files.readAllBytes(file)).isEqualTo(good);
    try (Stream<Path> files = Files.list(dir)) {
      assertThat(files).containsExactly(file);
    }
    assertThat(persistence(newStore()).load(file)).isEqualTo(2);
  }

  @Test
  void whenTheDirectoryIsMissing_thenSaveFailsAndWritesNothing() {
    InMemoryStore store = newStore();
    call(store, CHAT, "key-1", 5);
    Path file = dir.resolve("missing").resolve("quotas.bin");

    assertThatThrownBy(() -> persistence(store).save(file)).isInstanceOf(IOException.class);
    assertThat(Files.exists(file.getParent())).isFalse();
  }

  @Test
  void whenSavedWhileEightThreadsReserve_thenEverySnapshotIsConsistentPerCounter()
      throws Exception {
    QuotaLimit requests = QuotaLimit.of("daily", QuotaUnit.REQUESTS, 1_000, QuotaPeriod.DAY)
        .withThresholds(10, 20, 30, 40, 50, 60, 70, 80, 90, 100);
    Budget budget = new Budget("chat", null, null, null, null, List.of(requests), null);
    InMemoryStore store = newStore();
    QuotaPersistence persistence = persistence(store);
    int threads = 8;
    int callsPerThread = 1_000;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<?>> workers = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      workers.add(pool.submit(() -> {
        go.await();
        for (int i = 0; i < callsPerThread; i++) {
          if (!call(store, budget, "key-" + (i % threads), 1).decision().allowed()) {
            throw new AssertionError("denied at call " + i);
          }
        }
        return null;
      }));
    }
    List<Path> files = new ArrayList<>();
    go.countDown();
    try {
      while (!workers.stream().allMatch(Future::isDone) || files.isEmpty()) {
        Path file = dir.resolve("quotas-" + files.size() + ".bin");
        persistence.save(file);
        files.add(file);
      }
      for (Future<?> w : workers) {
        w.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    Path last = dir.resolve("quotas-last.bin");
    persistence.save(last);
    files.add(last);

    Map<String, Long> previous = new HashMap<>();
    for (Path file : files) {
      InMemoryStore loaded = newStore();
      persistence(loaded).load(file);
      for (QuotaFile.Snap s : counters(loaded, nowMs.get()).values()) {
        // what it used and the thresholds it reported were read together: never a threshold
        // reported above what the counter shows used
        for (int k = 0; k < requests.thresholds().size(); k++) {
          int percent = requests.thresholds().get(k);
          long bit = 1L << (percent & 63);
          boolean fired = ((percent < 64 ? s.firedLow() : s.firedHigh()) & bit) != 0;
          if (fired) {
            assertThat(s.used()).as("%s at %d %%", s.id().key(), percent)
                .isGreaterThanOrEqualTo(requests.thresholdAmount(k));
          }
        }
        assertThat(s.used()).isBetween(previous.getOrDefault(s.id().key(), 0L), 1_000L);
        previous.put(s.id().key(), s.used());
      }
    }
    InMemoryStore loaded = newStore();
    assertThat(persistence(loaded).load(last)).isEqualTo(threads);
    Map<QuotaBook.Id, QuotaFile.Snap> finalCounters = counters(loaded, nowMs.get());
    assertThat(finalCounters.values()).extracting(QuotaFile.Snap::used)
        .containsOnly(1_000L).hasSize(threads);
    assertThat(finalCounters.values()).allSatisfy(s -> {
      assertThat(s.firedLow()).isEqualTo((1L << 10) | (1L << 20) | (1L << 30) | (1L << 40)
          | (1L << 50) | (1L << 60));
      assertThat(s.firedHigh()).isEqualTo((1L << (70 & 63)) | (1L << (80 & 63))
          | (1L << (90 & 63)) | (1L << (100 & 63)));
    });
    assertThat(new HashSet<>(previous.keySet())).hasSize(threads);
  }

  @Test
  void whenLoadedIntoAStoreWithThatCounter_thenTheFileReplacesIt() throws IOException {
    InMemoryStore before = newStore();
    call(before, CHAT, "key-1", 5);
    Path file = dir.resolve("quotas.bin");
    persistence(before).save(file);
    InMemoryStore after = newStore();
    call(after, CHAT, "key-1", 1);
    call(after, CHAT, "key-1", 1);

    persistence(after).load(file);

    assertThat(after.administration().orElseThrow().quotas(CHAT, "key-1"))
        .extracting(QuotaStatus::used).containsExactly(1L, 5L);
  }

  @Test
  void whenAStoreKeepsItsStateElsewhere_thenItOffersNoPersistence() {
    RateLimitStore other = new RateLimitStore() {
      @Override
      public Decision acquire(List<Budget> levels, List<String> keys, double cost,
          Composition composition) {
        throw new UnsupportedOperationException();
      }

      @Override
      public Reservation reserve(List<Budget> levels, List<String> keys, double cost,
          long estimatedModelTokens, Composition composition) {
        throw new UnsupportedOperationException();
      }

      @Override
      public void reconcile(Reservation reservation, long actualModelTokens) {}

      @Override
      public void chargeModelTokens(List<Budget> levels, List<String> keys, long modelTokens) {}

      @Override
      public void release(Reservation reservation) {}
    };

    assertThat(other.quotaPersistence()).isEmpty();
  }

  /** Fails the write that would go past {@code limit} bytes. */
  private static final class FailingAfter extends FilterOutputStream {
    private final int limit;
    private int written;

    FailingAfter(OutputStream out, int limit) {
      super(out);
      this.limit = limit;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (written + len > limit) {
        out.write(b, off, limit - written);
        written = limit;
        throw new IOException("disk full after " + limit + " bytes");
      }
      out.write(b, off, len);
      written += len;
    }
  }
}
