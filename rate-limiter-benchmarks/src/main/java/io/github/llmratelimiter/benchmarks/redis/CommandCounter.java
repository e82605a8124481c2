package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.metrics.CommandLatencyRecorder;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.net.SocketAddress;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts every command a Lettuce client completes, by type: installed as the client's {@link
 * CommandLatencyRecorder}, it sees each round trip the client makes.
 */
final class CommandCounter implements CommandLatencyRecorder {

  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();

  @Override
  public void recordCommandLatency(SocketAddress local, SocketAddress remote,
      ProtocolKeyword commandType, long firstResponseLatency, long completionLatency) {
    counts.computeIfAbsent(commandType.toString(), k -> new LongAdder()).increment();
  }

  /** Returns the commands completed so far, by type. */
  Map<String, Long> snapshot() {
    Map<String, Long> s = new TreeMap<>();
    counts.forEach((type, n) -> s.put(type, n.sum()));
    return s;
  }

  /** Returns the commands completed so far, all types together. */
  long total() {
    long total = 0;
    for (LongAdder n : counts.values()) {
      total += n.sum();
    }
    return total;
  }
}
