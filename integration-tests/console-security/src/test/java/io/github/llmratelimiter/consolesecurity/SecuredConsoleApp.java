package io.github.llmratelimiter.consolesecurity;

import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.core.annotation.Order;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A rate-limited API ({@code GET /v1/hello}, 3 a minute per key) with the console on and the
 * Actuator security of docs/operations.md; the API's own chain lets every caller through (the
 * limiter authenticates callers by their API key). Users: {@code admin} and {@code ops}.
 */
@SpringBootApplication
public class SecuredConsoleApp {

  @Bean
  InMemoryUserDetailsManager users() {
    return new InMemoryUserDetailsManager(
        User.withUsername("admin").password("{noop}admin-password").roles("ADMIN").build(),
        User.withUsername("ops").password("{noop}ops-password").roles("OPS").build());
  }

  @Bean
  @Order(2)
  SecurityFilterChain api(HttpSecurity http) throws Exception {
    return http.authorizeHttpRequests(requests -> requests.anyRequest().permitAll())
        .csrf(csrf -> csrf.disable()).build();
  }

  /** The API. */
  @RestController
  static class Api {

    @GetMapping("/v1/hello")
    String hello() {
      return "hello";
    }
  }
}
