package io.github.llmratelimiter.sample;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A model behind a real OpenAI-compatible provider ({@code gateway.provider.base-url}): each call
 * is one {@code POST <base-url>/v1/chat/completions}, not streamed, with the request's model,
 * messages and token cap. The reply's {@code usage} gives the tokens, and the provider's
 * rate-limit headers ({@code x-ratelimit-*}, {@code retry-after}, {@code retry-after-ms}) go into
 * {@link Reply#providerHeaders()}. A 429 is a {@link ProviderRateLimitException} with those
 * headers; any other status, an unreadable answer, a failed connection or a call longer than the
 * timeout is an {@link UpstreamFailureException} (the gateway answers 502). The API key is sent as
 * {@code Authorization: Bearer} and appears in no message.
 */
final class OpenAiChatModel implements ChatModel {

  private final HttpClient http;
  private final URI endpoint;
  private final GatewayProperties.Provider provider;
  private final JsonMapper json;

  /**
   * @param provider the provider's settings; its base URL must be set
   * @param json the mapper that writes requests and reads replies
   */
  OpenAiChatModel(GatewayProperties.Provider provider, JsonMapper json) {
    if (provider.baseUrl() == null) {
      throw new IllegalArgumentException("gateway.provider.base-url must be set, but was null");
    }
    this.provider = provider;
    this.json = json;
    String base = provider.baseUrl().toString().replaceFirst("/+$", "");
    this.endpoint = URI.create(base + "/v1/chat/completions");
    this.http = HttpClient.newBuilder().connectTimeout(provider.timeout()).build();
  }

  @Override
  public Reply complete(ChatCompletionRequest request) {
    HttpRequest.Builder call = HttpRequest.newBuilder(endpoint)
        .timeout(provider.timeout())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .POST(HttpRequest.BodyPublishers.ofByteArray(json.writeValueAsBytes(body(request))));
    if (provider.apiKey() != null) {
      call.header("Authorization", "Bearer " + provider.apiKey());
    }
    HttpResponse<String> response;
    try {
      response = http.send(call.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UpstreamFailureException("the provider at " + endpoint + " did not answer within "
          + provider.timeout() + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new UpstreamFailureException("the call to the provider was interrupted", e);
    }
    Map<String, String> headers = rateLimitHeaders(response);
    if (response.statusCode() == 429) {
      throw new ProviderRateLimitException(headers,
          "0".equals(headers.get("x-ratelimit-remaining-requests")) ? "requests" : "tokens");
    }
    if (response.statusCode() != 200) {
      throw new UpstreamFailureException("the provider answered " + response.statusCode(), null);
    }
    return reply(response.body()).withProviderHeaders(headers);
  }

  /** The provider's request: the caller's model, messages and cap, never streamed. */
  private static Map<String, Object> body(ChatCompletionRequest request) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("model", request.model());
    List<Map<String, Object>> messages = new ArrayList<>();
    for (ChatCompletionRequest.Message m : request.messages()) {
      Map<String, Object> message = new LinkedHashMap<>();
      message.put("role", m.role());
      message.put("content", m.content());
      messages.add(message);
    }
    body.put("messages", messages);
    if (request.maxCompletionTokens() != null) {
      body.put("max_completion_tokens", request.maxCompletionTokens());
    }
    if (request.maxTokens() != null) {
      body.put("max_tokens", request.maxTokens());
    }
    body.put("stream", false);
    return body;
  }

  private Reply reply(String body) {
    JsonNode root;
    try {
      root = json.readTree(body);
    } catch (JacksonException e) {
      throw new UpstreamFailureException("the provider's answer is not JSON", e);
    }
    JsonNode choice = root.path("choices").path(0);
    JsonNode usage = root.path("usage");
    if (!choice.path("message").isObject() || !usage.path("prompt_tokens").isIntegralNumber()
        || !usage.path("completion_tokens").isIntegralNumber()) {
      throw new UpstreamFailureException(
          "the provider's answer has no choices[0].message or no usage token counts", null);
    }
    return new Reply(choice.path("message").path("content").asString(""),
        usage.path("prompt_tokens").asInt(), usage.path("completion_tokens").asInt(),
        choice.path("finish_reason").asString("stop"));
  }

  /** The provider's rate-limit and retry headers, names in lower case, first values. */
  static Map<String, String> rateLimitHeaders(HttpResponse<?> response) {
    Map<String, String> headers = new LinkedHashMap<>();
    response.headers().map().forEach((name, values) -> {
      String n = name.toLowerCase(Locale.ROOT);
      if (!values.isEmpty() && (n.startsWith("x-ratelimit-") || n.equals("retry-after")
          || n.equals("retry-after-ms"))) {
        headers.put(n, values.get(0));
      }
    });
    return headers;
  }

  /** Returns the endpoint and timeout, never the key. */
  @Override
  public String toString() {
    return "OpenAiChatModel[" + endpoint + ", timeout " + provider.timeout() + "]";
  }
}
