package io.github.llmratelimiter.sample;

import java.util.Map;

/** The upstream the gateway forwards to: a bean a user replaces with a real provider client. */
public interface ChatModel {

  /**
   * Answers a chat request.
   *
   * @param request the validated request
   * @return the reply and its token counts
   * @throws ProviderRateLimitException if the provider refused the call with a 429
   */
  Reply complete(ChatCompletionRequest request);

  /**
   * A reply.
   *
   * @param content the assistant's text
   * @param promptTokens tokens in the request's messages
   * @param completionTokens tokens in the reply
   * @param finishReason why the reply ended: {@code stop}, or {@code length} when the request's
   *     token cap cut it
   * @param providerHeaders the provider's rate-limit headers on its answer (OpenAI's {@code
   *     x-ratelimit-*}), empty when it sent none
   */
  record Reply(String content, int promptTokens, int completionTokens, String finishReason,
      Map<String, String> providerHeaders) {

    /** Copies the headers. */
    public Reply {
      providerHeaders = Map.copyOf(providerHeaders);
    }

    /**
     * Returns a reply without provider headers.
     *
     * @param content the assistant's text
     * @param promptTokens tokens in the request's messages
     * @param completionTokens tokens in the reply
     * @param finishReason why the reply ended
     */
    public Reply(String content, int promptTokens, int completionTokens, String finishReason) {
      this(content, promptTokens, completionTokens, finishReason, Map.of());
    }

    /**
     * Returns the same reply with the provider's headers.
     *
     * @param headers the provider's rate-limit headers
     * @return the reply
     */
    public Reply withProviderHeaders(Map<String, String> headers) {
      return new Reply(content, promptTokens, completionTokens, finishReason, headers);
    }

    /**
     * Returns a reply that ended by itself.
     *
     * @param content the assistant's text
     * @param promptTokens tokens in the request's messages
     * @param completionTokens tokens in the reply
     */
    public Reply(String content, int promptTokens, int completionTokens) {
      this(content, promptTokens, completionTokens, "stop");
    }

    /**
     * Returns the model tokens the call used, as OpenAI's {@code usage.total_tokens} reports them.
     *
     * @return prompt plus completion tokens
     */
    public int totalTokens() {
      return promptTokens + completionTokens;
    }
  }
}
