package io.github.llmratelimiter.sample;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.web.DefaultRateLimitProblemFactory;
import io.github.llmratelimiter.autoconfigure.web.RequestBodyTooLargeException;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.http.ProblemDetail;

/**
 * The starter's RFC 9457 problems plus the {@code error} object OpenAI clients read, so a 429, 401
 * 400 or 413 from the gateway looks like OpenAI's own to an SDK.
 */
class OpenAiProblemFactory extends DefaultRateLimitProblemFactory {

  OpenAiProblemFactory() {
    super(URI.create("urn:llmratelimiter:problem:rate-limited"));
  }

  @Override
  public ProblemDetail rateLimited(RateLimitOutcome outcome, HttpServletRequest request) {
    ProblemDetail problem = super.rateLimited(outcome, request);
    // OpenAI's error type names what ran out: "tokens" for a model-token (TPM) limit
    boolean tokens = outcome.decision().reason() == io.github.llmratelimiter.core.Reason.TPM_LIMIT
        || (outcome.reservation() != null
            && !outcome.decidingBudget().fitsModelTokens(outcome.reservation().estimate()));
    problem.setProperty("error",
        error(problem.getDetail(), tokens ? "tokens" : "requests", null, "rate_limit_exceeded"));
    return problem;
  }

  @Override
  public ProblemDetail missingApiKey(HttpServletRequest request) {
    ProblemDetail problem = super.missingApiKey(request);
    problem.setProperty("error", error(problem.getDetail(), "invalid_request_error", null, "invalid_api_key"));
    return problem;
  }

  @Override
  public ProblemDetail invalidRequest(InvalidRateLimitRequestException e, HttpServletRequest request) {
    ProblemDetail problem = super.invalidRequest(e, request);
    problem.setProperty("error", error(problem.getDetail(), "invalid_request_error", null, null));
    return problem;
  }

  @Override
  public ProblemDetail bodyTooLarge(RequestBodyTooLargeException e, HttpServletRequest request) {
    ProblemDetail problem = super.bodyTooLarge(e, request);
    problem.setProperty("error", error(problem.getDetail(), "invalid_request_error", null, "request_too_large"));
    return problem;
  }

  static Map<String, Object> error(
      @Nullable String message, String type, @Nullable String param, @Nullable String code) {
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("message", message);
    error.put("type", type);
    error.put("param", param);
    error.put("code", code);
    return error;
  }
}
