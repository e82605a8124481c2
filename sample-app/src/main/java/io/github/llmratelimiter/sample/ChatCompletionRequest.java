package io.github.llmratelimiter.sample;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The part of an OpenAI chat-completions request the gateway reads; other fields are ignored.
 *
 * @param model the model's name
 * @param messages the conversation
 * @param stream whether to answer as server-sent events
 * @param maxTokens the client's cap on the reply (the older name), or null
 * @param maxCompletionTokens the client's cap on the reply, or null
 * @param streamOptions OpenAI's stream options ({@code include_usage}), or null
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ChatCompletionRequest(
    @Nullable String model,
    @Nullable List<Message> messages,
    @Nullable Boolean stream,
    @JsonProperty("max_tokens") @Nullable Integer maxTokens,
    @JsonProperty("max_completion_tokens") @Nullable Integer maxCompletionTokens,
    @JsonProperty("stream_options") @Nullable Map<String, Object> streamOptions) {

  /**
   * Returns whether the client asked for a stream.
   *
   * @return {@code stream == true}
   */
  public boolean streaming() {
    return Boolean.TRUE.equals(stream);
  }

  /**
   * Returns the cap on the reply's tokens: {@code max_completion_tokens}, else {@code max_tokens}.
   *
   * @return the cap, or null when the request sets none
   */
  public @Nullable Integer completionCap() {
    return maxCompletionTokens != null ? maxCompletionTokens : maxTokens;
  }

  /**
   * Returns whether a streamed answer should end with a usage chunk.
   *
   * @return {@code stream_options.include_usage == true}
   */
  public boolean includeUsage() {
    return streamOptions != null && Boolean.TRUE.equals(streamOptions.get("include_usage"));
  }

  /**
   * One message; its content is a string or a list of parts with a {@code text}.
   *
   * @param role the author's role
   * @param content the content
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  public record Message(@Nullable String role, @Nullable Object content) {

    /**
     * Returns the message's text: the string content, or its text parts joined.
     *
     * @return the text, empty when there is none
     */
    public String text() {
      if (content instanceof String s) {
        return s;
      }
      StringBuilder sb = new StringBuilder();
      if (content instanceof List<?> parts) {
        for (Object part : parts) {
          if (part instanceof Map<?, ?> map && map.get("text") instanceof String t) {
            sb.append(sb.isEmpty() ? "" : " ").append(t);
          }
        }
      }
      return sb.toString();
    }
  }
}
