package io.github.llmratelimiter.gateway;

import java.util.List;
import java.util.Map;

/**
 * The default rule: prompt bytes over {@code bytesPerToken}, plus framing, plus the completion
 * maximum. See {@link ModelTokenEstimator}.
 */
final class DefaultModelTokenEstimator implements ModelTokenEstimator {

  /** Top-level fields whose text is prompt besides {@code messages}. */
  private static final List<String> PROMPT_FIELDS =
      List.of("prompt", "input", "instructions", "system", "tools", "functions");
  /** Completion caps; the largest one present counts (a handler may honour any of them). */
  private static final List<String> COMPLETION_FIELDS =
      List.of("max_completion_tokens", "max_tokens", "max_output_tokens");

  private final int bytesPerToken;
  private final int tokensPerMessage;
  private final int tokensPerRequest;
  private final long defaultCompletionTokens;

  DefaultModelTokenEstimator(int bytesPerToken, int tokensPerMessage, int tokensPerRequest,
      long defaultCompletionTokens) {
    if (bytesPerToken < 1) {
      throw new IllegalArgumentException("bytesPerToken must be >= 1, but was " + bytesPerToken);
    }
    if (tokensPerMessage < 0) {
      throw new IllegalArgumentException("tokensPerMessage must be >= 0, but was " + tokensPerMessage);
    }
    if (tokensPerRequest < 0) {
      throw new IllegalArgumentException("tokensPerRequest must be >= 0, but was " + tokensPerRequest);
    }
    if (defaultCompletionTokens < 0) {
      throw new IllegalArgumentException(
          "defaultCompletionTokens must be >= 0, but was " + defaultCompletionTokens);
    }
    this.bytesPerToken = bytesPerToken;
    this.tokensPerMessage = tokensPerMessage;
    this.tokensPerRequest = tokensPerRequest;
    this.defaultCompletionTokens = defaultCompletionTokens;
  }

  @Override
  public long estimate(Map<String, ?> body) {
    long prompt = tokensPerRequest;
    if (body.get("messages") instanceof List<?> messages) {
      for (Object m : messages) {
        prompt = saturatedAdd(prompt, tokensPerMessage + tokens(m));
      }
    }
    for (String field : PROMPT_FIELDS) {
      Object v = body.get(field);
      if (v != null) {
        prompt = saturatedAdd(prompt, tokens(v));
      }
    }
    return saturatedAdd(prompt, completion(body));
  }

  @Override
  public long estimateUnread(long contentLength) {
    long prompt = contentLength < 0 ? 0 : ceilDiv(contentLength, bytesPerToken);
    return saturatedAdd(saturatedAdd(prompt, tokensPerRequest), defaultCompletionTokens);
  }

  private long completion(Map<String, ?> body) {
    long max = -1;
    for (String field : COMPLETION_FIELDS) {
      if (body.get(field) instanceof Number n && n.longValue() >= 0) {
        max = Math.max(max, n.longValue());
      }
    }
    if (max < 0) {
      max = defaultCompletionTokens;
    }
    long choices = body.get("n") instanceof Number n && n.longValue() > 1 ? n.longValue() : 1;
    return max > Long.MAX_VALUE / choices ? Long.MAX_VALUE : max * choices;
  }

  /** The tokens of a JSON value: its text's bytes over bytesPerToken, a number counting as 1. */
  private long tokens(Object value) {
    return ceilDiv(bytes(value), bytesPerToken);
  }

  /**
   * UTF-8 bytes of every string in a JSON value (keys of objects excluded); a number or boolean
   * counts as one token's worth of bytes (a pre-tokenized prompt is a list of numbers).
   */
  private long bytes(Object value) {
    if (value instanceof String s) {
      return utf8Length(s);
    }
    if (value instanceof Number || value instanceof Boolean) {
      return bytesPerToken;
    }
    long sum = 0;
    if (value instanceof Map<?, ?> map) {
      for (Object v : map.values()) {
        sum = saturatedAdd(sum, v == null ? 0 : bytes(v));
      }
    } else if (value instanceof List<?> list) {
      for (Object v : list) {
        sum = saturatedAdd(sum, v == null ? 0 : bytes(v));
      }
    }
    return sum;
  }

  /**
   * The length of the string in UTF-8, without encoding it: as {@code getBytes(UTF_8).length},
   * where an unpaired surrogate becomes one byte ({@code '?'}).
   */
  static long utf8Length(String s) {
    int n = s.length();
    long bytes = n;
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        continue;
      }
      if (c < 0x800) {
        bytes += 1;
      } else if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        bytes += 2; // a pair: 4 bytes for 2 chars
        i++;
      } else if (!Character.isSurrogate(c)) {
        bytes += 2;
      }
    }
    return bytes;
  }

  private static long ceilDiv(long a, long b) {
    return a == 0 ? 0 : (a - 1) / b + 1;
  }

  private static long saturatedAdd(long a, long b) {
    long r = a + b;
    return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
  }
}
