package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.gateway.internal.BodyModel;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * Where a front door reads the model that picks a request's budget. The budget charged
 * must be the budget of the model the handler serves, so a source the client can set independently
 * of what the handler reads (a query parameter beside a JSON body's {@code "model"}) must not win.
 */
public enum ModelSource {

  /**
   * The request body only: the top-level {@code "model"} string of a JSON body, or the {@code model}
   * field of a form body. A request without one names no model.
   */
  BODY,

  /**
   * The {@code model} parameter of the query string only; a form body's fields do not count. For
   * routes whose handler reads the model from the URL.
   */
  QUERY,

  /**
   * The body's model when the body names one (a JSON body with a {@code "model"} member, or a form
   * body with a {@code model} field), else the query string's {@code model} parameter: the query
   * applies only to requests without a body or whose body names no model. The default.
   */
  BODY_THEN_QUERY,

  /** No model: every request of the route is charged to the budgets that name no model. */
  NONE;

  /**
   * Returns whether this source reads the request body.
   *
   * @return {@code true} for {@link #BODY} and {@link #BODY_THEN_QUERY}
   */
  public boolean readsBody() {
    return this == BODY || this == BODY_THEN_QUERY;
  }

  /**
   * Picks the model from the sources this one reads, asking only those.
   *
   * @param body what the body says about the model
   * @param query the query string's model, or {@code null} when it names none
   * @return the model, or {@code null} when the source names none
   */
  public @Nullable String model(Supplier<BodyModel> body, Supplier<@Nullable String> query) {
    return switch (this) {
      case NONE -> null;
      case QUERY -> query.get();
      case BODY -> body.get().model();
      case BODY_THEN_QUERY -> {
        BodyModel b = body.get();
        yield b.named() ? b.model() : query.get();
      }
    };
  }
}
