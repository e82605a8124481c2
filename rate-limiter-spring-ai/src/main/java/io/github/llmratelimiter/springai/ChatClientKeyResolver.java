package io.github.llmratelimiter.springai;

import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.util.ClassUtils;

/**
 * Finds the caller a {@code ChatClient} call is charged to: the key its budgets are counted by (a
 * tenant, a user, an application). The caller's model is added by the advisor.
 *
 * <p>The {@linkplain #defaults() default} is the authenticated principal of Spring Security's
 * {@code SecurityContextHolder} when Spring Security is present and the calling thread is
 * authenticated, as {@code principal:<name>} (the key the web front doors give a principal); else
 * the advisor parameter {@link RateLimitAdvisor#CALLER} set on the call, as is.
 */
@FunctionalInterface
public interface ChatClientKeyResolver {

  /**
   * Returns the caller of a call.
   *
   * @param request the call, its advisor parameters in its context
   * @return the caller's key, or {@code null} (or blank) when it has none: the call then follows
   *     {@code ratelimiter.missing-key} (the anonymous key, or an {@code
   *     InvalidRateLimitRequestException} before the model is called)
   */
  @Nullable String resolve(ChatClientRequest request);

  /**
   * Returns the resolver that reads the advisor parameter {@link RateLimitAdvisor#CALLER} alone.
   *
   * @return the resolver
   */
  static ChatClientKeyResolver parameter() {
    return request -> {
      Object caller = request.context().get(RateLimitAdvisor.CALLER);
      return caller == null ? null : caller.toString();
    };
  }

  /**
   * Returns the default resolver: the authenticated principal when Spring Security is present,
   * else the advisor parameter {@link RateLimitAdvisor#CALLER}.
   *
   * @return the resolver
   */
  static ChatClientKeyResolver defaults() {
    ChatClientKeyResolver parameter = parameter();
    if (!ClassUtils.isPresent("org.springframework.security.core.context.SecurityContextHolder",
        ChatClientKeyResolver.class.getClassLoader())) {
      return parameter;
    }
    return request -> {
      String principal = SecurityPrincipal.current();
      return principal != null ? principal : parameter.resolve(request);
    };
  }
}
