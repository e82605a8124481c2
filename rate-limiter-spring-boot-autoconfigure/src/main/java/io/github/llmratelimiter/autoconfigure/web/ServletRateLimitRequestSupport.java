package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.MissingApiKeyException;
import io.github.llmratelimiter.autoconfigure.ModelTokenEstimator;
import io.github.llmratelimiter.autoconfigure.ModelTokenReservation;
import io.github.llmratelimiter.autoconfigure.RateLimitKey;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.MissingKey;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The servlet side of key resolution and charge tracking, shared by the interceptor and the
 * {@code @RateLimited} aspect: the "charged" mark is a request attribute, so a request is charged
 * once whichever of them gets there first. An allowed call's model-token reservation is kept as the
 * request attribute {@link ModelTokens#ATTRIBUTE}, where {@link ModelTokenUsageFilter} settles it.
 */
final class ServletRateLimitRequestSupport implements RateLimitRequestSupport {

  static final String CHARGED_ATTRIBUTE = ServletRateLimitRequestSupport.class.getName() + ".charged";

  private final RateLimitKeyResolver resolver;
  private final MissingKey missingKey;
  private final String anonymousKey;
  private final ModelTokenEstimator estimator;

  ServletRateLimitRequestSupport(RateLimitKeyResolver resolver, MissingKey missingKey,
      String anonymousKey, ModelTokenEstimator estimator) {
    this.resolver = resolver;
    this.missingKey = missingKey;
    this.anonymousKey = anonymousKey;
    this.estimator = estimator;
  }

  @Override
  public @Nullable Object currentRequest() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : attributes.getRequest();
  }

  @Override
  public boolean alreadyCharged() {
    ServletRequestAttributes attributes = attributes();
    return attributes != null && alreadyCharged(attributes.getRequest());
  }

  @Override
  public RateLimitKey resolveKey(@Nullable String model) {
    ServletRequestAttributes attributes = attributes();
    if (attributes == null) {
      throw new IllegalStateException("no HTTP request is bound to the calling thread");
    }
    return resolveKey(attributes.getRequest(), model);
  }

  @Override
  public @Nullable String currentModel() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : resolver.resolveModel(attributes.getRequest());
  }

  @Override
  public void record(RateLimitOutcome outcome) {
    ServletRequestAttributes attributes = attributes();
    if (attributes != null) {
      record(attributes.getRequest(), attributes.getResponse(), outcome);
    }
  }

  @Override
  public long estimateModelTokens() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? 0 : estimateModelTokens(attributes.getRequest());
  }

  /**
   * Estimates a request from its JSON body as {@link ModelPeekingFilter} buffered it, else from its
   * length alone (also when the body is not a JSON object: the handler reports that).
   */
  long estimateModelTokens(HttpServletRequest request) {
    byte[] body = ModelPeekingFilter.body(request);
    if (body == null) {
      return estimator.estimateUnread(request.getContentLengthLong());
    }
    Map<String, Object> map = Json.requestBody(request);
    return map == null ? estimator.estimateUnread(body.length) : estimator.estimate(map);
  }

  boolean alreadyCharged(HttpServletRequest request) {
    return request.getAttribute(CHARGED_ATTRIBUTE) != null;
  }

  RateLimitKey resolveKey(HttpServletRequest request, @Nullable String model) {
    String apiKey = resolver.resolveApiKey(request);
    if (apiKey == null || apiKey.isBlank()) {
      if (missingKey == MissingKey.REJECT) {
        throw new MissingApiKeyException();
      }
      apiKey = anonymousKey;
    }
    return RateLimitKey.of(apiKey, model != null ? model : resolver.resolveModel(request));
  }

  void record(HttpServletRequest request, @Nullable HttpServletResponse response, RateLimitOutcome outcome) {
    request.setAttribute(CHARGED_ATTRIBUTE, outcome);
    ModelTokenReservation reservation = outcome.modelTokens();
    if (reservation != null) {
      request.setAttribute(ModelTokens.ATTRIBUTE, reservation);
    }
    if (response != null && !response.isCommitted() && outcome.decision().allowed()) {
      RateLimitHeaders.write(outcome, response::setHeader);
    }
  }

  private static @Nullable ServletRequestAttributes attributes() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    return attributes instanceof ServletRequestAttributes s ? s : null;
  }
}
