package io.github.llmratelimiter.gateway.scg;

import io.github.llmratelimiter.gateway.scg.reactive.ScgReactiveGatewayApplication;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.annotation.AliasFor;
import org.springframework.test.context.ActiveProfiles;

/**
 * A test of the reactive gateway ({@link ScgReactiveGatewayApplication}) on a random port, with the
 * routes of one profile: {@code filter} ({@code RequestRateLimiter}) or {@code routes} ({@code
 * ratelimiter.web.routes}). It replaces the MVC gateway that {@link GatewayTestSupport} names.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@SpringBootTest(classes = ScgReactiveGatewayApplication.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
@ActiveProfiles
@interface ReactiveGatewayTest {

  /** The profile whose routes the gateway has. */
  @AliasFor(annotation = ActiveProfiles.class, attribute = "profiles")
  String[] value();
}
