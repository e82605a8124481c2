package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitRequestException;
import io.github.llmratelimiter.autoconfigure.MissingApiKeyException;
import io.github.llmratelimiter.autoconfigure.ModelSource;
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
 *
 * <p>Before a request is charged, {@link #check(HttpServletRequest)} rejects what the limiter
 * cannot charge correctly: a body above {@code max-body} (413), a JSON body whose model cannot be
 * read on a route that reads it (413), and a JSON body whose completion caps or {@code n} would
 * make the estimate wrong (400, {@link CompletionFields}). The model comes from the source of the
 * route that matched the request ({@link #MODEL_SOURCE_ATTRIBUTE}), else the default source.
 */
final class ServletRateLimitRequestSupport implements RateLimitRequestSupport {

  static final String CHARGED_ATTRIBUTE = ServletRateLimitRequestSupport.class.getName() + ".charged";

  /** The request attribute holding the {@link ModelSource} of the route that matched. */
  static final String MODEL_SOURCE_ATTRIBUTE =
      ServletRateLimitRequestSupport.class.getName() + ".modelSource";

  private static final String CHECKED_ATTRIBUTE =
      ServletRateLimitRequestSupport.class.getName() + ".checked";

  private final RateLimitKeyResolver resolver;
  private final MissingKey missingKey;
  private final String anonymousKey;
  private final ModelTokenEstimator estimator;
  private final BodyLimits limits;

  ServletRateLimitRequestSupport(RateLimitKeyResolver resolver, MissingKey missingKey,
      String anonymousKey, ModelTokenEstimator estimator, BodyLimits limits) {
    this.resolver = resolver;
    this.missingKey = missingKey;
    this.anonymousKey = anonymousKey;
    this.estimator = estimator;
    this.limits = limits;
  }

  @Override
  public @Nullable Object currentRequest() {
    ServletRequestAttributes attributes = attributes();
    return attributes == null ? null : attributes.getRequest();
  }

  @Override
  public void checkRequest() {
    ServletRequestAttributes attributes = attributes();
    if (attributes != null) {
      check(attributes.getRequest());
    }
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
    return attributes == null ? null : model(attributes.getRequest());
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
    try {
      byte[] body = ModelPeekingFilter.body(request);
      if (body == null) {
        long length = request.getContentLengthLong();
        return estimator.estimateUnread(length >= 0 ? length : ModelPeekingFilter.length(request));
      }
      Map<String, Object> map = Json.requestBody(request);
      return map == null ? estimator.estimateUnread(body.length) : estimator.estimate(map);
    } catch (IllegalArgumentException e) {
      throw e instanceof InvalidRateLimitRequestException i ? i
          : new InvalidRateLimitRequestException("the request's model tokens cannot be estimated: "
              + e.getMessage(), e);
    }
  }

  /**
   * Rejects a request the limiter cannot charge correctly; run before it is charged (once per
   * request).
   *
   * @throws RequestBodyTooLargeException if its body is above {@code max-body}, or is a JSON body
   *     above {@code max-body-peek} on a route that reads the model from the body
   * @throws InvalidRateLimitRequestException if its JSON body's completion caps or {@code n} are
   *     invalid
   */
  void check(HttpServletRequest request) {
    if (request.getAttribute(CHECKED_ATTRIBUTE) != null) {
      return;
    }
    long declared = request.getContentLengthLong();
    if (declared > limits.maxBody() || (declared < 0 && ModelPeekingFilter.tooLong(request))) {
      throw new RequestBodyTooLargeException(BodyLimits.MAX_BODY, limits.maxBody());
    }
    if (limits.readBodies()) {
      String contentType = request.getContentType();
      boolean json = contentType != null && ModelPeekingFilter.containsJson(contentType);
      long length = declared >= 0 ? declared : ModelPeekingFilter.length(request);
      if (json && length > limits.maxPeek() && modelSource(request).readsBody()) {
        throw new RequestBodyTooLargeException(BodyLimits.MAX_BODY_PEEK, limits.maxPeek());
      }
      Map<String, Object> body = json ? Json.requestBody(request) : null;
      if (body != null) {
        CompletionFields.check(body);
      }
    }
    request.setAttribute(CHECKED_ATTRIBUTE, Boolean.TRUE);
  }

  /** The source of the route that matched the request, else the default. */
  ModelSource modelSource(HttpServletRequest request) {
    return request.getAttribute(MODEL_SOURCE_ATTRIBUTE) instanceof ModelSource s
        ? s : limits.defaultModelSource();
  }

  private @Nullable String model(HttpServletRequest request) {
    return resolver.resolveModel(request, modelSource(request));
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
    return RateLimitKey.of(apiKey, model != null ? model : model(request));
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
