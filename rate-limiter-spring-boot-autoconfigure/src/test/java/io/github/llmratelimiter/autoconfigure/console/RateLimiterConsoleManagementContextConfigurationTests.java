package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.InvalidRateLimitPropertyException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The console's configuration in the management context: off by default and while the endpoint
 * is not exposed over HTTP, a servlet or a web filter by stack, its refresh validated, backing off
 * from an application's own page; and the page's escaping of what it writes into attributes.
 */
class RateLimiterConsoleManagementContextConfigurationTests {

  private final WebApplicationContextRunner servlet = new WebApplicationContextRunner()
      .withUserConfiguration(RateLimiterConsoleManagementContextConfiguration.class)
      .withPropertyValues("management.endpoints.web.exposure.include=ratelimiter");

  private final ReactiveWebApplicationContextRunner reactive = new ReactiveWebApplicationContextRunner()
      .withUserConfiguration(RateLimiterConsoleManagementContextConfiguration.class)
      .withPropertyValues("management.endpoints.web.exposure.include=ratelimiter");

  @Test
  void runWhenNotEnabledShouldServeNoConsole() {
    servlet.run(context -> assertThat(context).doesNotHaveBean(ConsolePage.class)
        .doesNotHaveBean("rateLimiterConsoleServlet"));
    reactive.run(context -> assertThat(context).doesNotHaveBean(ConsoleWebFilter.class));
  }

  @Test
  void runWhenEnabledButTheEndpointIsNotExposedOverHttpShouldServeNoConsole() {
    servlet.withPropertyValues("ratelimiter.console.enabled=true", "management.endpoints.web.exposure.include=health")
        .run(context -> assertThat(context).doesNotHaveBean(ConsolePage.class));
    servlet.withPropertyValues("ratelimiter.console.enabled=true", "management.endpoint.ratelimiter.access=NONE")
        .run(context -> assertThat(context).doesNotHaveBean(ConsolePage.class));
  }

  @Test
  void runWhenEnabledOnServletsShouldMapAServletToTheConsolesPaths() {
    servlet.withPropertyValues("ratelimiter.console.enabled=true").run(context -> {
      assertThat(context).hasSingleBean(ConsolePage.class).doesNotHaveBean(ConsoleWebFilter.class);
      assertThat(context.getBean("rateLimiterConsoleServlet", ServletRegistrationBean.class).getUrlMappings())
          .containsExactly("/ratelimiter/console/*");
    });
  }

  @Test
  void runWhenEnabledOnWebFluxShouldRegisterTheFilter() {
    reactive.withPropertyValues("ratelimiter.console.enabled=true").run(context -> assertThat(context)
        .hasSingleBean(ConsolePage.class).hasSingleBean(ConsoleWebFilter.class)
        .doesNotHaveBean("rateLimiterConsoleServlet"));
  }

  @Test
  void runWhenTheRefreshIsOutOfRangeShouldFailNamingTheProperty() {
    for (String refresh : new String[] {"499ms", "61s", "0s"}) {
      servlet.withPropertyValues("ratelimiter.console.enabled=true", "ratelimiter.console.refresh=" + refresh)
          .run(context -> assertThat(context).hasFailed().getFailure()
              .rootCause().isInstanceOf(InvalidRateLimitPropertyException.class)
              .hasMessageContaining("ratelimiter.console.refresh"));
    }
    for (String refresh : new String[] {"500ms", "1m"}) {
      servlet.withPropertyValues("ratelimiter.console.enabled=true", "ratelimiter.console.refresh=" + refresh)
          .run(context -> assertThat(context).hasNotFailed());
    }
  }

  @Test
  void runWhenTheApplicationDefinesItsPageShouldUseIt() {
    // the application's beans come first (in the parent context when the management server is apart)
    new WebApplicationContextRunner()
        .withUserConfiguration(OwnPage.class, RateLimiterConsoleManagementContextConfiguration.class)
        .withPropertyValues("management.endpoints.web.exposure.include=ratelimiter", "ratelimiter.console.enabled=true")
        .run(context -> assertThat(context.getBean(ConsolePage.class)).isSameAs(OwnPage.PAGE));
  }

  @Test
  void thePageEscapesWhatItWritesIntoAttributesAndAnswersNothingOutsideItsPaths() {
    ConsolePage page = new ConsolePage(
        new ConsolePage.ConsoleLinks("/actuator/ratelimiter", null, null, false, false), 2000);
    String body = new String(page.answer("GET", ConsolePage.PATH, "/a\"b<c>&'").body(), StandardCharsets.UTF_8);
    assertThat(body).contains("data-endpoint=\"/a&quot;b&lt;c&gt;&amp;&#39;/actuator/ratelimiter\"")
        .doesNotContain("/a\"b");
    assertThat(page.answer("GET", "/ratelimiter/consolex", "").status()).isEqualTo(404);
    assertThat(page.answer("GET", "/actuator/ratelimiter", "").status()).isEqualTo(404);
    // without the endpoint, no page either
    ConsolePage without = new ConsolePage(new ConsolePage.ConsoleLinks(null, null, null, false, false), 2000);
    assertThat(without.answer("GET", ConsolePage.PATH, "").status()).isEqualTo(404);
    assertThat(without.answer("GET", ConsolePage.PATH + "/console.js", "").status()).isEqualTo(404);
  }

  /** An application's own page. */
  @Configuration(proxyBeanMethods = false)
  static class OwnPage {

    static final ConsolePage PAGE =
        new ConsolePage(new ConsolePage.ConsoleLinks(null, null, null, false, false), 1000);

    @Bean
    ConsolePage ownConsolePage() {
      return PAGE;
    }
  }
}
