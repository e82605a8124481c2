package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.MissingApiKeyException;
import io.github.llmratelimiter.autoconfigure.RateLimitKey;
import io.github.llmratelimiter.autoconfigure.RateLimitOutcome;
import io.github.llmratelimiter.autoconfigure.RateLimitRequestSupport;
import io.github.llmratelimiter.autoconfigure.RateLimiterProperties.MissingKey;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;

/**
 * The servlet side of key resolution and charge tracking, shared by the interceptor and the
 * {@code @RateLimited} aspect: the "charged" mark is a request attribute, so a request is charged
 * once whichever of them gets there first.
 */
final class ServletRateLimitRequestSupport implements RateLimitRequestSupport {

  static final String CHARGED_ATTRIBUTE = ServletRateLimitRequestSupport.class.getName() + ".charged";

  private final RateLimitKeyResolver resolver;
  private final MissingKey missingKey;
  private final String anonymousKey;

  ServletRateLimitRequestSupport(RateLimitKeyResolver resolver, MissingKey missingKey, String anonymousKey) {
    this.resolver = resolver;
    this.missingKey = missingKey;
    this.anonymousKey = anonymousKey;
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
    if (response != null && !response.isCommitted() && outcome.decision().allowed()) {
      RateLimitHeaders.of(outcome).forEach(response::setHeader);
    }
  }

  private static @Nullable ServletRequestAttributes attributes() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    return attributes instanceof ServletRequestAttributes s ? s : null;
  }
}
