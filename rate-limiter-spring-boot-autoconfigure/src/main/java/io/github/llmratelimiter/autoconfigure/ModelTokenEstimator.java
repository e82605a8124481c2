package io.github.llmratelimiter.autoconfigure;

import java.util.Map;

/**
 * Estimates, before an LLM call runs, how many model tokens (prompt plus completion) it will use:
 * the amount a tokens-per-window (TPM) budget reserves until the response's usage reconciles it.
 *
 * <p>The default estimator ({@code ratelimiter.tpm.*}) counts UTF-8 bytes of the prompt's text
 * divided by {@code bytes-per-token} (rounded up per message), adds {@code tokens-per-message} per
 * chat message and {@code tokens-per-request}, and adds the largest of the request's {@code
 * max_completion_tokens}, {@code max_tokens} and {@code max_output_tokens} (times {@code n}), else
 * {@code default-completion-tokens}. In a web request these fields were checked before (integers,
 * caps from 0 and {@code n} from 1, each at most 2^31-1; else a 400). Define a bean of this type to use a real tokenizer instead.
 * Model tokens are the LLM's tokens, not the burst bucket's permits.
 */
@FunctionalInterface
public interface ModelTokenEstimator {

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
