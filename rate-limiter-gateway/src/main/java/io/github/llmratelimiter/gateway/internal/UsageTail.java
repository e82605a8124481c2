package io.github.llmratelimiter.gateway.internal;

import io.github.llmratelimiter.gateway.ModelUsage;
import org.jspecify.annotations.Nullable;

/**
 * Reads the usage of a JSON object from its end, where OpenAI-shaped bodies and stream chunks put
 * it, without reading what comes before: the object's last member named {@code usage}, followed
 * only by members whose values are strings, numbers, {@code true}, {@code false} or {@code null}.
 *
 * <p>It answers only when the answer is the one a full read of a well-formed object gives ({@link
 * UsageScanner#modelUsage(java.util.Map)}), and {@link #UNKNOWN} otherwise, for the caller to read
 * the whole object: a {@code usage} object whose names carry escapes, whose counts are not plain
 * integers of at most 18 digits or {@code null}, or that nests deeper than its details objects; a
 * later member that is an object or an array, or whose name carries an escape; a {@code usage}
 * name not preceded by {@code ,} or {@code {}; bytes after the object's closing brace other than
 * whitespace. A {@code usage} member found this way is the object's last one of that name (the
 * one a full read keeps), and a {@code usage} object takes precedence over a {@code response}
 * member's usage, so the members before it need not be read; a {@code usage} of {@code null}
 * reports none when no member can be named {@code response} (the object holds neither {@code
 * "response"} nor a {@code \}{@code u} escape).
 *
 * <p>What comes before that member is not read, so it is not checked either: an object malformed
 * before a well-formed end reports the usage its end holds, where a full read reports none.
 */
final class UsageTail {

  /** The answer when the end of the object does not settle the usage. */
  static final ModelUsage UNKNOWN = new ModelUsage(0, 0, 0, 0, false);

  private static final byte[] USAGE = {'"', 'u', 's', 'a', 'g', 'e', '"'};
  private static final byte[] RESPONSE = {'"', 'r', 'e', 's', 'p', 'o', 'n', 's', 'e', '"'};
  private static final byte[] UNICODE_ESCAPE = {'\\', 'u'};
  private static final int MAX_DIGITS = 18;

  private final byte[] b;
  private final int end;
  private int i;

  // the counts of the usage object; -1 for one that is absent or null
  private long total = -1;
  private long prompt = -1;
  private long completion = -1;
  private long input = -1;
  private long output = -1;
  private long promptCached = -1;
  private long inputCached = -1;

  private UsageTail(byte[] b, int from, int end) {
    this.b = b;
    this.i = from;
    this.end = end;
  }

  /**
   * Reads the usage of the JSON object in {@code b[off, off + len)} from its end.
   *
   * @return the usage; {@code null} when the object reports none; {@link #UNKNOWN} when its end
   *     does not tell
   */
  static @Nullable ModelUsage read(byte[] b, int off, int len) {
    int end = off + len;
    int q = lastIndexOf(b, off, end, USAGE);
    if (q < 0 || !preceded(b, off, q)) {
      return UNKNOWN;
    }
    UsageTail t = new UsageTail(b, q + USAGE.length, end);
    t.ws();
    if (!t.take(':')) {
      return UNKNOWN;
    }
    t.ws();
    boolean isNull = t.literal("null");
    if (!isNull && !t.usageObject()) {
      return UNKNOWN;
    }
    if (!t.restOfObject()) {
      return UNKNOWN;
    }
    if (isNull) {
      return indexOf(b, off, end, RESPONSE) < 0 && indexOf(b, off, end, UNICODE_ESCAPE) < 0
          ? null : UNKNOWN;
    }
    return t.prompt >= 0 && t.completion >= 0
        ? UsageScanner.of(t.total, t.prompt, t.completion, t.promptCached)
        : UsageScanner.of(t.total, t.input, t.output, t.inputCached);
  }

  /** Whether the name at {@code q} is preceded, past whitespace, by {@code ,} or {@code {}. */
  private static boolean preceded(byte[] b, int off, int q) {
    int p = q - 1;
    while (p >= off && space(b[p])) {
      p--;
    }
    return p >= off && (b[p] == ',' || b[p] == '{');
  }

  /** Reads the usage object, the parser at its {@code {}; false when it is not a simple one. */
  private boolean usageObject() {
    if (!take('{')) {
      return false;
    }
    ws();
    if (take('}')) {
      return true;
    }
    do {
      ws();
      int name = name();
      if (name == BAD) {
        return false;
      }
      ws();
      if (!take(':')) {
        return false;
      }
      ws();
      boolean object = peek('{');
      long value = object ? details() : count();
      if (value == -2) {
        return false;
      }
      switch (name) {
        // a count that is not a number counts as absent, as do details that are not an object
        case TOTAL -> total = object ? -1 : value;
        case PROMPT -> prompt = object ? -1 : value;
        case COMPLETION -> completion = object ? -1 : value;
        case INPUT -> input = object ? -1 : value;
        case OUTPUT -> output = object ? -1 : value;
        case PROMPT_DETAILS -> promptCached = object ? value : -1;
        case INPUT_DETAILS -> inputCached = object ? value : -1;
        default -> { }
      }
      ws();
    } while (take(','));
    return take('}');
  }

  /** The {@code cached_tokens} of a details object: -1 when absent, -2 when not a simple one. */
  private long details() {
    take('{');
    ws();
    if (take('}')) {
      return -1;
    }
    long cached = -1;
    do {
      ws();
      int name = name();
      if (name == BAD) {
        return -2;
      }
      ws();
      if (!take(':')) {
        return -2;
      }
      ws();
      long value = count();
      if (value == -2) {
        return -2;
      }
      if (name == CACHED) {
        cached = value;
      }
      ws();
    } while (take(','));
    return take('}') ? cached : -2;
  }

  /** A count: a plain integer, or -1 for {@code null}; -2 for anything else. */
  private long count() {
    if (literal("null")) {
      return -1;
    }
    int start = i;
    long value = 0;
    while (i < end && b[i] >= '0' && b[i] <= '9') {
      value = value * 10 + (b[i] - '0');
      i++;
    }
    int digits = i - start;
    if (digits == 0 || digits > MAX_DIGITS || (digits > 1 && b[start] == '0')
        || (i < end && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'))) {
      return -2;
    }
    return value;
  }

  // the names the usage is read from
  private static final int BAD = -1;
  private static final int OTHER = 0;
  private static final int TOTAL = 1;
  private static final int PROMPT = 2;
  private static final int COMPLETION = 3;
  private static final int INPUT = 4;
  private static final int OUTPUT = 5;
  private static final int PROMPT_DETAILS = 6;
  private static final int INPUT_DETAILS = 7;
  private static final int CACHED = 8;
  private static final int USAGE_NAME = 9;
  private static final String[] NAMES = {null, "total_tokens", "prompt_tokens",
      "completion_tokens", "input_tokens", "output_tokens", "prompt_tokens_details",
      "input_tokens_details", "cached_tokens", "usage"};

  /** Reads a member's name: which of {@link #NAMES} it is, {@link #OTHER}, or {@link #BAD}. */
  private int name() {
    if (!take('"')) {
      return BAD;
    }
    int start = i;
    while (i < end && b[i] != '"') {
      if (b[i] == '\\' || (b[i] & 0xff) < 0x20) {
        return BAD; // an escape: a full read decodes it
      }
      i++;
    }
    if (i >= end) {
      return BAD;
    }
    int length = i - start;
    i++;
    for (int n = 1; n < NAMES.length; n++) {
      String known = NAMES[n];
      if (known.length() == length && matches(start, known)) {
        return n;
      }
    }
    return OTHER;
  }

  private boolean matches(int start, String known) {
    for (int k = 0; k < known.length(); k++) {
      if (b[start + k] != known.charAt(k)) {
        return false;
      }
    }
    return true;
  }

  /**
   * Reads the members after the usage, each a name without escapes other than {@code usage} and a
   * scalar value, then the object's closing brace and nothing but whitespace.
   */
  private boolean restOfObject() {
    ws();
    while (take(',')) {
      ws();
      int name = name();
      if (name == BAD || name == USAGE_NAME) {
        return false;
      }
      ws();
      if (!take(':')) {
        return false;
      }
      ws();
      if (!scalar()) {
        return false;
      }
      ws();
    }
    if (!take('}')) {
      return false;
    }
    ws();
    return i == end;
  }

  /** Skips a string, a number, {@code true}, {@code false} or {@code null}. */
  private boolean scalar() {
    if (take('"')) {
      while (i < end && b[i] != '"') {
        i += b[i] == '\\' ? 2 : 1;
      }
      return i++ < end;
    }
    if (literal("true") || literal("false") || literal("null")) {
      return true;
    }
    int start = i;
    while (i < end && ((b[i] >= '0' && b[i] <= '9') || b[i] == '-' || b[i] == '+' || b[i] == '.'
        || b[i] == 'e' || b[i] == 'E')) {
      i++;
    }
    return i > start;
  }

  private boolean literal(String word) {
    if (end - i < word.length()) {
      return false;
    }
    for (int k = 0; k < word.length(); k++) {
      if (b[i + k] != word.charAt(k)) {
        return false;
      }
    }
    i += word.length();
    return true;
  }

  private boolean take(char c) {
    if (i < end && b[i] == c) {
      i++;
      return true;
    }
    return false;
  }

  private boolean peek(char c) {
    return i < end && b[i] == c;
  }

  private void ws() {
    while (i < end && space(b[i])) {
      i++;
    }
  }

  private static boolean space(byte c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  private static int lastIndexOf(byte[] b, int from, int to, byte[] needle) {
    outer:
    for (int p = to - needle.length; p >= from; p--) {
      for (int j = 0; j < needle.length; j++) {
        if (b[p + j] != needle[j]) {
          continue outer;
        }
      }
      return p;
    }
    return -1;
  }

  private static int indexOf(byte[] b, int from, int to, byte[] needle) {
    outer:
    for (int p = from; p <= to - needle.length; p++) {
      for (int j = 0; j < needle.length; j++) {
        if (b[p + j] != needle[j]) {
          continue outer;
        }
      }
      return p;
    }
    return -1;
  }
}
