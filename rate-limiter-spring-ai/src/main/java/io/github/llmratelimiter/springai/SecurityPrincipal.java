package io.github.llmratelimiter.springai;

import io.github.llmratelimiter.gateway.KeySource;
import org.jspecify.annotations.Nullable;
import org.springframework.security.authentication.AnonymousAuthenticationToken;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;

/** The calling thread's authenticated principal; loaded only when Spring Security is present. */
final class SecurityPrincipal {

  private SecurityPrincipal() {}

  /** The principal's key ({@code principal:<name>}), or null when the thread is not authenticated. */
  static @Nullable String current() {
    Authentication auth = SecurityContextHolder.getContext().getAuthentication();
    if (auth == null || !auth.isAuthenticated() || auth instanceof AnonymousAuthenticationToken) {
      return null;
    }
    String name = auth.getName();
    return name == null || name.isBlank() ? null : KeySource.PRINCIPAL.prefix() + name;
  }
}
