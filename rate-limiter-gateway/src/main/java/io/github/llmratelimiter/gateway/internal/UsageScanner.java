package io.github.llmratelimiter.gateway.internal;

import io.github.llmratelimiter.gateway.JsonReader;
import io.github.llmratelimiter.gateway.ModelUsage;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Finds the model tokens a response reports as its body is written: a JSON body is buffered (up to
 * {@value #MAX_CAPTURED_BYTES} bytes) and read at the end; in an event stream the last {@code data:}
 * line (each line up to the same size) with a usage wins. A write to an event stream costs a search
 * for its last line feed and for {@code "usage"}: the lines it ends are read one by one only when
 * they mention a usage, and only the part of a line that no line feed has ended yet is kept. Each
 * JSON object is read from its end when its last members settle the usage ({@link UsageTail}: the
 * {@code usage} member and scalar members after it), else whole by the {@link JsonReader}. A body
 * that is neither JSON nor an event stream reports nothing. Safe to feed from one thread and read
 * from another.
 */
public final class UsageScanner {

  /** The most bytes kept of a JSON body, or of one event-stream line. */
  public static final int MAX_CAPTURED_BYTES = 1 << 20;

  private final JsonReader json;

  private static final byte[] DATA = "data:".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] USAGE = "\"usage\"".getBytes(StandardCharsets.US_ASCII);

  private byte[] buffer = EMPTY;
  private int size;
  private boolean overflow;
  private @Nullable Boolean eventStream;
  private volatile @Nullable ModelUsage streamUsage;

  private static final byte[] EMPTY = new byte[0];

  /** How far the search for {@code "usage"} moves on after each byte it reads (Horspool). */
  private static final int[] SKIP = new int[256];

  static {
    Arrays.fill(SKIP, USAGE.length);
    for (int i = 0; i < USAGE.length - 1; i++) {
      SKIP[USAGE[i] & 0xff] = USAGE.length - 1 - i;
    }
  }

  /**
   * Creates a scanner for one response.
   *
   * @param json the parser of the usage
   */
  public UsageScanner(JsonReader json) {
    this.json = json;
  }

  /**
   * Reads the model tokens an OpenAI-shaped body reports: {@code usage.total_tokens}, else {@code
   * prompt_tokens + completion_tokens}, else {@code input_tokens + output_tokens} (also under a
   * {@code response} member, as the Responses API streams it).
   *
   * @param body a parsed JSON object
   * @return the usage, or null when the body carries none
   */
  public static @Nullable Long usage(Map<?, ?> body) {
    ModelUsage u = modelUsage(body);
    return u == null ? null : u.totalTokens();
  }

  /**
   * Reads the usage an OpenAI-shaped body reports, itemized when it can be: {@code prompt_tokens},
   * {@code completion_tokens} and {@code prompt_tokens_details.cached_tokens} (Chat Completions),
   * else {@code input_tokens}, {@code output_tokens} and {@code input_tokens_details.cached_tokens}
   * (Responses API, also under a {@code response} member); the total is {@code total_tokens} when
   * present, else prompt plus completion. A body with a total but no complete split reports the
   * total alone; cached tokens above the prompt count as the prompt count.
   *
   * @param body a parsed JSON object
   * @return the usage, or null when the body carries none
   */
  public static @Nullable ModelUsage modelUsage(Map<?, ?> body) {
    Object usage = body.get("usage");
    if (!(usage instanceof Map) && body.get("response") instanceof Map<?, ?> response) {
      usage = response.get("usage");
    }
    if (!(usage instanceof Map<?, ?> u)) {
      return null;
    }
    long total = count(u.get("total_tokens"));
    long prompt = count(u.get("prompt_tokens"));
    long completion = count(u.get("completion_tokens"));
    long cached = cached(u.get("prompt_tokens_details"));
    if (prompt < 0 || completion < 0) {
      prompt = count(u.get("input_tokens"));
      completion = count(u.get("output_tokens"));
      cached = cached(u.get("input_tokens_details"));
    }
    return of(total, prompt, completion, cached);
  }

  /**
   * Returns the usage of the counts read from a {@code usage} object, -1 for each one absent.
   *
   * @param total {@code total_tokens}
   * @param prompt the prompt (input) tokens
   * @param completion the completion (output) tokens
   * @param cached the cached prompt tokens
   * @return the usage, or null when neither a total nor a prompt and completion are known
   */
  public static @Nullable ModelUsage of(long total, long prompt, long completion, long cached) {
    if (prompt >= 0 && completion >= 0 && prompt <= Long.MAX_VALUE - completion) {
      long c = Math.min(Math.max(0, cached), prompt);
      return new ModelUsage(total >= 0 ? total : prompt + completion, prompt, completion, c, true);
    }
    return total >= 0 ? ModelUsage.ofTotal(total) : null;
  }

  private static long count(@Nullable Object value) {
    return value instanceof Number n && n.longValue() >= 0 ? n.longValue() : -1;
  }

  private static long cached(@Nullable Object details) {
    return details instanceof Map<?, ?> d ? count(d.get("cached_tokens")) : -1;
  }

  /**
   * Takes the next bytes of the body.
   *
   * @param contentType the response's content type, read on the first call only (later calls may
   *     pass {@code null})
   * @param b the bytes
   * @param off where they start
   * @param len how many
   */
  public synchronized void accept(@Nullable String contentType, byte[] b, int off, int len) {
    if (eventStream == null) {
      String type = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
      eventStream = type.startsWith("text/event-stream") ? Boolean.TRUE
          : type.contains("json") ? Boolean.FALSE : null;
      if (eventStream == null) {
        overflow = true; // neither JSON nor SSE: nothing to read
        eventStream = Boolean.FALSE;
      }
    }
    if (!eventStream) {
      if (!overflow) {
        append(b, off, len);
      }
      return;
    }
    int end = off + len;
    int last = end - 1;
    while (last >= off && b[last] != '\n') {
      last--;
    }
    if (last < off) { // the current line goes on
      if (!overflow) {
        append(b, off, len);
      }
      return;
    }
    if (contains(b, off, last)) { // a line ending here mentions a usage: read them one by one
      lines(b, off, last + 1);
    } else { // none can report a usage
      size = 0;
      overflow = false;
    }
    if (last + 1 < end) {
      append(b, last + 1, end - last - 1);
    }
  }

  /**
   * Whether the current line's bytes kept so far, followed by {@code b[off..to)}, hold {@code
   * "usage"}, also across where they meet.
   */
  private boolean contains(byte[] b, int off, int to) {
    if (overflow || size == 0) {
      return indexOfUsage(b, off, to) >= 0;
    }
    if (indexOfUsage(buffer, 0, size) >= 0 || indexOfUsage(b, off, to) >= 0) {
      return true;
    }
    if (SKIP[buffer[size - 1] & 0xff] == USAGE.length) {
      return false; // the kept bytes end with no byte of "usage" but its last: no split one meets
    }
    // split after k of its bytes: the kept bytes end with the first k, b starts with the rest
    for (int k = 1; k < USAGE.length; k++) {
      if (k <= size && USAGE.length - k <= to - off
          && Arrays.equals(buffer, size - k, size, USAGE, 0, k)
          && Arrays.equals(b, off, off + USAGE.length - k, USAGE, k, USAGE.length)) {
        return true;
      }
    }
    return false;
  }

  /** Reads the lines of {@code b[from..end)}, which ends with a line feed, one by one. */
  private void lines(byte[] b, int from, int end) {
    for (int i = from; i < end; i++) {
      if (b[i] == '\n') {
        if (!overflow) {
          append(b, from, i - from);
        }
        line();
        from = i + 1;
      }
    }
  }

  private void append(byte[] b, int off, int len) {
    if (size + len > MAX_CAPTURED_BYTES) {
      overflow = true;
      size = 0;
      return;
    }
    if (size + len > buffer.length) {
      // the first write usually holds the whole body: size the buffer to it
      buffer = Arrays.copyOf(buffer, Math.max(size + len, Math.min(MAX_CAPTURED_BYTES,
          Math.max(256, buffer.length * 2))));
    }
    System.arraycopy(b, off, buffer, size, len);
    size += len;
  }

  /** One complete SSE line. */
  private void line() {
    if (!overflow) {
      int from = 0;
      int to = size;
      while (from < to && buffer[from] <= ' ') {
        from++;
      }
      while (to > from && buffer[to - 1] <= ' ') {
        to--;
      }
      if (startsWith(buffer, from, to, DATA) && indexOfUsage(buffer, from, to) >= 0) {
        from += DATA.length;
        while (from < to && buffer[from] <= ' ') {
          from++;
        }
        ModelUsage usage = read(buffer, from, to - from);
        if (usage != null) {
          streamUsage = usage;
        }
      }
    }
    size = 0;
    overflow = false;
  }

  /**
   * Returns the usage the body written so far reports: an event stream's last usage line, or a
   * whole JSON body's usage.
   *
   * @return the model tokens, or {@code null} when the body reports none (yet)
   */
  public @Nullable Long usage() {
    ModelUsage u = modelUsage();
    return u == null ? null : u.totalTokens();
  }

  /**
   * Returns the usage the body written so far reports, itemized when it is ({@link
   * #modelUsage(Map)}): an event stream's last usage line, or a whole JSON body's usage.
   *
   * @return the usage, or {@code null} when the body reports none (yet)
   */
  public synchronized @Nullable ModelUsage modelUsage() {
    if (Boolean.TRUE.equals(eventStream)) {
      return streamUsage;
    }
    return overflow || size == 0 ? null : read(buffer, 0, size);
  }

  /** The usage of one JSON object: from its end when that tells ({@link UsageTail}), else whole. */
  private @Nullable ModelUsage read(byte[] b, int off, int len) {
    ModelUsage usage = UsageTail.read(b, off, len);
    return usage == UsageTail.UNKNOWN ? json.modelUsage(b, off, len) : usage;
  }

  private static boolean startsWith(byte[] b, int from, int to, byte[] prefix) {
    if (to - from < prefix.length) {
      return false;
    }
    for (int i = 0; i < prefix.length; i++) {
      if (b[from + i] != prefix[i]) {
        return false;
      }
    }
    return true;
  }

  /** The first index of {@code "usage"} in {@code b[from..to)}, or -1 (Horspool's skips). */
  private static int indexOfUsage(byte[] b, int from, int to) {
    byte[] needle = USAGE;
    int n = needle.length;
    byte lastByte = needle[n - 1];
    for (int i = from + n - 1; i < to; ) {
      byte c = b[i];
      if (c == lastByte) {
        int j = n - 2;
        while (j >= 0 && b[i - n + 1 + j] == needle[j]) {
          j--;
        }
        if (j < 0) {
          return i - n + 1;
        }
      }
      i += SKIP[c & 0xff];
    }
    return -1;
  }
}
