package io.github.llmratelimiter.consolesecurity;

import static org.springframework.security.config.Customizer.withDefaults;

import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.security.web.util.matcher.OrRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;

/** The filter chain for the Actuator paths and the console, as docs/operations.md shows it. */
@Configuration(proxyBeanMethods = false)
class ActuatorSecurity {

  @Bean
  @Order(1)
  SecurityFilterChain actuator(HttpSecurity http) throws Exception {
    RequestMatcher console = PathPatternRequestMatcher.withDefaults().matcher("/ratelimiter/console/**");
    return http.securityMatcher(new OrRequestMatcher(EndpointRequest.toAnyEndpoint(), console))
        .authorizeHttpRequests(requests -> requests
            .requestMatchers(EndpointRequest.to("health")).permitAll()
            .requestMatchers(EndpointRequest.to("ratelimiter").withHttpMethod(HttpMethod.DELETE))
            .hasRole("ADMIN")
            .anyRequest().hasAnyRole("ADMIN", "OPS"))            // the console and the reads
        .csrf(csrf -> csrf.spa())
        .httpBasic(withDefaults())
        .build();
  }
}
