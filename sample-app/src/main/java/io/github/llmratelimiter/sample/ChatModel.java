package io.github.llmratelimiter.sample;

/** The upstream the gateway forwards to: a bean a user replaces with a real provider client. */
public interface ChatModel {

  /**
   * Answers a chat request.
   *
   * @param request the validated request
   * @return the reply and its token counts
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
   */
  record Reply(String content, int promptTokens, int completionTokens, String finishReason) {

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
