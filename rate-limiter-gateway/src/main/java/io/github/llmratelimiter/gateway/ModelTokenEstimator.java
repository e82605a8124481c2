package io.github.llmratelimiter.gateway;

import java.util.Map;

/**
 * Estimates, before an LLM call runs, how many model tokens (prompt plus completion) it will use:
 * the amount a tokens-per-window (TPM) budget reserves until the response's usage reconciles it.
 *
 * <p>The default estimator ({@code ratelimiter.tpm.*}) counts UTF-8 bytes of the prompt's text
 * divided by {@code bytes-per-token} (rounded up per message), adds {@code tokens-per-message} per
 * chat message and {@code tokens-per-request}, and adds the largest of the request's {@code
 * max_completion_tokens}, {@code max_tokens} and {@code max_output_tokens} (times {@code n}), else
 * {@code default-completion-tokens} ({@link #of}). In a web request these fields were checked
 * before (integers, caps from 0 and {@code n} from 1, each at most 2^31-1; else a 400). Provide
 * another (in Spring, a bean of this type) to use a real tokenizer instead. Model tokens are the
 * LLM's tokens, not the burst bucket's permits.
 */
@FunctionalInterface
public interface ModelTokenEstimator {

  /**
   * Returns the default estimator with the given rule.
   *
   * @param bytesPerToken UTF-8 bytes of prompt text per model token, at least 1
   * @param tokensPerMessage model tokens added per chat message, at least 0
   * @param tokensPerRequest model tokens added per request, at least 0
   * @param defaultCompletionTokens the completion assumed when the request sets no cap, at least 0
   * @return the estimator
   * @throws IllegalArgumentException naming the first argument out of its range
   */
  static ModelTokenEstimator of(int bytesPerToken, int tokensPerMessage, int tokensPerRequest,
      long defaultCompletionTokens) {
    return new DefaultModelTokenEstimator(
        bytesPerToken, tokensPerMessage, tokensPerRequest, defaultCompletionTokens);
  }

  /**
   * Returns the default estimator with the properties' defaults: 4 bytes a token, 4 tokens per
   * message, 3 per request, 256 completion tokens.
   *
   * @return the estimator
   */
  static ModelTokenEstimator defaults() {
    return of(4, 4, 3, 256);
  }

  /**
   * Estimates the model tokens of one request.
   *
   * @param body the request's JSON body as a map (an OpenAI-style request: {@code model}, {@code
   *     messages}, {@code prompt} or {@code input}, {@code max_tokens}, ...)
   * @return the estimate, at least 0
   */
  long estimate(Map<String, ?> body);

  /**
   * Estimates a request whose body could not be read (too large to buffer, or not JSON) from its
   * size alone; the default counts every byte of the body as prompt text.
   *
   * @param contentLength the body's length in bytes, or -1 when unknown
   * @return the estimate, at least 0
   */
  default long estimateUnread(long contentLength) {
    return 0;
  }
}
