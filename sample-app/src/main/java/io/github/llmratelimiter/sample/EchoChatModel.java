package io.github.llmratelimiter.sample;

/**
 * A local stand-in for a model: it echoes the last user message. Tokens are counted as
 * whitespace-separated words, so the usage numbers are deterministic.
 */
final class EchoChatModel implements ChatModel {

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
    return new Reply(content, Math.max(1, prompt), words(content));
  }

  static int words(String text) {
    String t = text.strip();
    return t.isEmpty() ? 0 : t.split("\\s+").length;
  }
}
