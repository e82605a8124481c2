package io.github.llmratelimiter.autoconfigure.web;

import io.github.llmratelimiter.autoconfigure.ModelTokenReservation;
import jakarta.servlet.ServletRequest;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.web.context.request.RequestAttributes;
import org.springframework.web.context.request.RequestContextHolder;

/**
 * Finds the {@link ModelTokenReservation} of an HTTP request that a tokens-per-window (TPM) budget
 * admitted, so gateway code can settle it itself: with the usage its upstream client reported, or
 * with a refund when the upstream call failed.
 *
 * <pre>{@code
 * ModelTokenReservation tokens = ModelTokens.current().orElse(null); // on the request's thread
 * try {
 *   Reply reply = upstream.call(request);
 *   if (tokens != null) tokens.reconcile(reply.totalTokens());
 * } catch (UpstreamException e) {
 *   if (tokens != null) tokens.refund(); // the RPM slot stays charged
 *   throw e;
 * }
 * }</pre>
 *
 * <p>Code that does not settle it leaves it to {@link ModelTokenUsageFilter}, which reads the usage
 * of an OpenAI-shaped response.
 */
public final class ModelTokens {

  /** The request attribute that holds the reservation. */
  public static final String ATTRIBUTE = ModelTokenReservation.class.getName();

  private ModelTokens() {}

  /**
   * Returns the reservation of the request bound to the calling thread.
   *
   * @return the reservation, or empty outside a request or when the request reserved no model
   *     tokens
   */
  public static Optional<ModelTokenReservation> current() {
    RequestAttributes attributes = RequestContextHolder.getRequestAttributes();
    return attributes == null ? Optional.empty()
        : Optional.ofNullable(attributes.getAttribute(ATTRIBUTE, RequestAttributes.SCOPE_REQUEST))
            .filter(ModelTokenReservation.class::isInstance)
            .map(ModelTokenReservation.class::cast);
  }

  /**
   * Returns the reservation of a request.
   *
   * @param request the request
   * @return the reservation, or empty when the request reserved no model tokens
   */
  public static Optional<ModelTokenReservation> of(ServletRequest request) {
    return request.getAttribute(ATTRIBUTE) instanceof ModelTokenReservation r
        ? Optional.of(r) : Optional.empty();
  }

  /**
   * Reads the model tokens an OpenAI-shaped body reports: {@code usage.total_tokens}, else {@code
   * prompt_tokens + completion_tokens}, else {@code input_tokens + output_tokens} (also under a
   * {@code response} member, as the Responses API streams it).
   *
   * @param body a parsed JSON object
   * @return the usage, or null when the body carries none
   */
  static @Nullable Long usage(Map<?, ?> body) {
    Object usage = body.get("usage");
    if (!(usage instanceof Map) && body.get("response") instanceof Map<?, ?> response) {
      usage = response.get("usage");
    }
    if (!(usage instanceof Map<?, ?> u)) {
      return null;
    }
    if (u.get("total_tokens") instanceof Number total && total.longValue() >= 0) {
      return total.longValue();
    }
    Long sum = sum(u.get("prompt_tokens"), u.get("completion_tokens"));
    return sum != null ? sum : sum(u.get("input_tokens"), u.get("output_tokens"));
  }

  private static @Nullable Long sum(@Nullable Object a, @Nullable Object b) {
    if (a instanceof Number x && b instanceof Number y && x.longValue() >= 0 && y.longValue() >= 0) {
      return x.longValue() + y.longValue();
    }
    return null;
  }
}
