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
   */
  record Reply(String content, int promptTokens, int completionTokens) {}
}
