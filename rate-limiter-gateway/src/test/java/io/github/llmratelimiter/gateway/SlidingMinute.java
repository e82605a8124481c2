package io.github.llmratelimiter.gateway;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import org.jspecify.annotations.Nullable;

/**
 * A provider's own limit for the simulations' stand-ins: a sliding minute of requests and model
 * tokens, in which an accepted call holds its estimate until it completes, then what it used.
 */
final class SlidingMinute {

  static final long MINUTE = Duration.ofMinutes(1).toNanos();

  /** One accepted call: when it came, and the tokens it holds. */
  static final class Entry {
    final long at;
    long tokens;

    Entry(long at, long tokens) {
      this.at = at;
      this.tokens = tokens;
    }
  }

  private final ArrayDeque<Entry> window = new ArrayDeque<>();
  /** The requests and the model tokens a minute; a provider may change them. */
  int requests;
  long tokens;

  SlidingMinute(int requests, long tokens) {
    this.requests = requests;
    this.tokens = tokens;
  }

  /** Accepts a call at {@code now} when it fits the minute: its entry, else {@code null}. */
  @Nullable Entry accept(long now, long estimate) {
    for (Iterator<Entry> it = window.iterator(); it.hasNext(); ) {
      if (now - it.next().at >= MINUTE) {
        it.remove();
      }
    }
    if (window.size() < requests && held() + estimate <= tokens) {
      Entry e = new Entry(now, estimate);
      window.add(e);
      return e;
    }
    return null;
  }

  /** The first instant at which enough calls have left the minute for a call of {@code estimate}. */
  long freeAt(long estimate) {
    long free = Long.MIN_VALUE;
    int n = window.size();
    long held = held();
    for (Entry e : window) {
      if (n < requests && held + estimate <= tokens) {
        break;
      }
      n--;
      held -= e.tokens;
      free = e.at + MINUTE;
    }
    return free;
  }

  /** The calls in the minute (as of the last {@link #accept}). */
  int size() {
    return window.size();
  }

  /** The model tokens the calls in the minute hold. */
  long held() {
    return window.stream().mapToLong(e -> e.tokens).sum();
  }

  /** The earliest call in the minute, or {@code null}. */
  @Nullable Entry oldest() {
    return window.peekFirst();
  }
}
