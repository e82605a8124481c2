package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.core.Reason;
import io.github.llmratelimiter.gateway.DefaultRateLimitProblemFactory;
import io.github.llmratelimiter.gateway.InvalidRateLimitRequestException;
import io.github.llmratelimiter.gateway.RateLimitOutcome;
import io.github.llmratelimiter.gateway.RateLimitProblem;
import io.github.llmratelimiter.gateway.RequestBodyTooLargeException;
import org.jspecify.annotations.Nullable;

/**
 * The starter's RFC 9457 problems plus the {@code error} object OpenAI clients read, so a 429 (the
 * caller's limits or the provider account's), 401, 400 or 413 from the gateway looks like OpenAI's
 * own to an SDK.
 */
class OpenAiProblemFactory extends DefaultRateLimitProblemFactory {

  OpenAiProblemFactory() {
    super(RATE_LIMITED_TYPE);
  }

  @Override
  public RateLimitProblem rateLimited(RateLimitOutcome outcome, @Nullable String path) {
    RateLimitProblem problem = super.rateLimited(outcome, path);
    if (problem.members().containsKey("error")) {
      return problem; // a quota's (spent, or smaller than the call): the starter's insufficient_quota
    }
    // OpenAI's error type names what ran out: "tokens" for a model-token (TPM) limit
    boolean tokens = outcome.decision().reason() == Reason.TPM_LIMIT
        || (outcome.reservation() != null
            && !outcome.decidingBudget().fitsModelTokens(outcome.reservation().estimate()));
    return problem.withOpenAiError(tokens ? "tokens" : "requests", null, "rate_limit_exceeded");
  }

  @Override
  public RateLimitProblem upstreamLimited(RateLimitOutcome outcome, @Nullable String path) {
    return super.upstreamLimited(outcome, path)
        .withOpenAiError("requests", null, "rate_limit_exceeded");
  }

  @Override
  public RateLimitProblem missingApiKey(@Nullable String path) {
    return super.missingApiKey(path).withOpenAiError("invalid_request_error", null, "invalid_api_key");
  }

  @Override
  public RateLimitProblem invalidRequest(InvalidRateLimitRequestException e, @Nullable String path) {
    return super.invalidRequest(e, path).withOpenAiError("invalid_request_error", null, null);
  }

  @Override
  public RateLimitProblem bodyTooLarge(RequestBodyTooLargeException e, @Nullable String path) {
    return super.bodyTooLarge(e, path)
        .withOpenAiError("invalid_request_error", null, "request_too_large");
  }
}
