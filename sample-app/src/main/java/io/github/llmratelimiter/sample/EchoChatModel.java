package io.github.llmratelimiter.sample;

/**
 * A local stand-in for a model: it echoes the last user message. Tokens are counted as
 * whitespace-separated words, so the usage numbers are deterministic: the prompt tokens are the
 * words of every message, the completion tokens the words of the reply, which a request's {@code
 * max_completion_tokens} / {@code max_tokens} cuts short (finish reason {@code length}) as a real
 * model does. Every answer passes through the {@link StandInProvider}'s own limits, which add
 * OpenAI's rate-limit headers to it or refuse it with a 429.
 */
final class EchoChatModel implements ChatModel {

  private final StandInProvider provider;

  EchoChatModel(StandInProvider provider) {
    this.provider = provider;
  }

  @Override
  public Reply complete(ChatCompletionRequest request) {
    String last = "";
    int prompt = 0;
    for (ChatCompletionRequest.Message m : request.messages()) {
      String text = m.text();
      prompt += words(text);
      if ("user".equals(m.role())) {
        last = text;
      }
    }
    String content = "Echo from " + request.model() + ": " + (last.isBlank() ? "(nothing)" : last.strip());
    Integer cap = request.completionCap();
    String[] reply = content.split("\\s+");
    Reply answer = cap != null && cap >= 0 && reply.length > cap
        ? new Reply(String.join(" ", java.util.Arrays.copyOf(reply, cap)), Math.max(1, prompt), cap, "length")
        : new Reply(content, Math.max(1, prompt), words(content));
    return answer.withProviderHeaders(provider.admit(answer.totalTokens()));
  }

  static int words(String text) {
    String t = text.strip();
    return t.isEmpty() ? 0 : t.split("\\s+").length;
  }
}
