package io.github.llmratelimiter.springai;

import io.github.llmratelimiter.gateway.ModelUsage;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.chat.model.ChatResponse;

/** The usage a {@link ChatResponse}'s metadata reports, as the gateway settles it. */
final class ChatUsage {

  private ChatUsage() {}

  /**
   * The itemized usage (prompt, completion, cached prompt tokens), or {@code null} when the
   * response reports none: no response, no usage, or one that counts no token (a stream's chunks
   * before its usage chunk).
   */
  static @Nullable ModelUsage of(@Nullable ChatResponse response) {
    if (response == null || response.getMetadata() == null) {
      return null;
    }
    Usage usage = response.getMetadata().getUsage();
    if (usage == null) {
      return null;
    }
    long prompt = nonNegative(usage.getPromptTokens());
    long completion = nonNegative(usage.getCompletionTokens());
    long total = nonNegative(usage.getTotalTokens());
    if (prompt == 0 && completion == 0 && total == 0) {
      return null;
    }
    Long cacheRead = usage.getCacheReadInputTokens();
    long cached = cacheRead == null || cacheRead < 0 ? 0 : Math.min(cacheRead, prompt);
    return new ModelUsage(total > 0 ? total : prompt + completion, prompt, completion, cached, true);
  }

  private static long nonNegative(@Nullable Integer count) {
    return count == null || count < 0 ? 0 : count;
  }
}
