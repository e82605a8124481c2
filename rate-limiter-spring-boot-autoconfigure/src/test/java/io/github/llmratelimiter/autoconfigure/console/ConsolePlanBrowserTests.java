package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.endpoint.RateLimiterEndpoint;
import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.autoconfigure.stacks.ScenarioApp;
import io.github.llmratelimiter.gateway.RateLimitEnforcer;
import io.github.llmratelimiter.gateway.internal.KeyIds;
import io.github.llmratelimiter.gateway.internal.KeyMasking;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The console's plan action against the endpoint contract for plans ({@code "plan"} in the
 * output, {@code POST /actuator/ratelimiter/{id}} with {@code {"plan":...}}), served by {@link
 * PlansEndpointStandIn} in place of the endpoint: the page shows a Plan column and, for a tenant, a
 * plan form; a confirmed change reaches the endpoint as the tenant's id and plan and shows in the
 * row, a cancelled one sends nothing, and clearing sends a null plan.
 */
class ConsolePlanBrowserTests {

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void aConfirmedPlanChangeReachesTheEndpointAndShowsInTheRow() throws Exception {
    List<String> args = new ArrayList<>(List.of("--server.port=0", "--ratelimiter.console.enabled=true",
        "--ratelimiter.console.refresh=1s", "--management.endpoint.ratelimiter.access=unrestricted",
        "--spring.autoconfigure.exclude=io.github.llmratelimiter.autoconfigure.endpoint."
            + "RateLimiterEndpointAutoConfiguration"));
    for (String p : ScenarioApp.PROPERTIES) {
      args.add("--" + p);
    }
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(ScenarioApp.class, StandIn.class)
        .web(WebApplicationType.SERVLET).run(args.toArray(String[]::new));
        ConsoleBrowser browser = ConsoleBrowser.start()) {
      int port = AbstractWebStackScenarioTests.port(app);
      String key = "sk-console-plan-tenant-9a9a";
      String masked = KeyMasking.mask(key);
      assertThat(send(port, key)).isEqualTo(200);
      browser.open("http://127.0.0.1:" + port + "/ratelimiter/console");
      assertThat(browser.bodyData()).containsEntry("assign", "true");
      String budget = browser.await("the tenant's row", d -> browser.tables().entrySet().stream()
          .filter(t -> t.getValue().stream().anyMatch(r -> masked.equals(r.key()))).map(t -> t.getKey())
          .findFirst().orElse(null));
      // the console re-renders its tables on every poll: what is read of them is tried again when
      // a poll replaced an element meanwhile
      int planColumns = browser.await("the Plan column", d -> d.findElements(
          By.xpath("//section[@data-budget='" + budget + "']//th[.='Plan']")).size());
      assertThat(planColumns).as("the Plan column").isEqualTo(1);
      String shown = browser.await("the plan cell", d -> plan(browser, budget, masked).orElse(null));
      assertThat(shown).isEqualTo("default");
      String id = row(browser, budget, masked).orElseThrow().id();
      browser.click(By.cssSelector("tr.tenant[data-id='" + id + "']"));
      browser.await("the plan form", d -> d.findElement(By.id("plan-form")).isDisplayed());
      PlansEndpointStandIn endpoint = app.getBean(PlansEndpointStandIn.class);

      // cancelled: nothing sent
      type(browser, "enterprise");
      browser.click(By.id("plan-change"));
      browser.await("the confirmation", d -> d.findElement(By.id("confirm")).isDisplayed());
      assertThat(browser.text(By.id("confirm-text"))).contains(masked, "\"enterprise\"");
      browser.click(By.id("confirm-cancel"));
      browser.awaitFreshPoll();
      assertThat(endpoint.assignments()).isEmpty();

      // confirmed: the id and the plan reach the endpoint, the row shows the plan
      type(browser, "pro");
      browser.click(By.id("plan-change"));
      browser.await("the confirmation", d -> d.findElement(By.id("confirm")).isDisplayed());
      browser.click(By.id("confirm-ok"));
      browser.await("the plan in the row", d -> plan(browser, budget, masked).filter("pro"::equals).isPresent());
      assertThat(endpoint.assignments()).containsExactly(id + "=pro");
      assertThat(browser.text(By.id("detail-plan"))).isEqualTo("Plan: pro");

      // cleared: a null plan
      browser.click(By.id("plan-clear"));
      browser.await("the confirmation", d -> d.findElement(By.id("confirm")).isDisplayed());
      browser.click(By.id("confirm-ok"));
      browser.await("the default plan in the row",
          d -> plan(browser, budget, masked).filter("default"::equals).isPresent());
      assertThat(endpoint.assignments()).containsExactly(id + "=pro", id + "=null");
      assertThat(browser.requestedUrls()).noneMatch(u -> u.contains(key.substring(0, key.length() - 4)));
    }
  }

  private static void type(ConsoleBrowser browser, String text) {
    browser.await("the plan typed", d -> {
      WebElement input = d.findElement(By.id("plan-input"));
      input.clear();
      input.sendKeys(text);
      return text.equals(input.getAttribute("value")) ? Boolean.TRUE : null;
    });
  }

  private static Optional<ConsoleBrowser.Row> row(ConsoleBrowser browser, String budget, String masked) {
    return browser.tables().getOrDefault(budget, List.of()).stream().filter(r -> masked.equals(r.key())).findFirst();
  }

  /** The plan cell's text of a tenant's row. */
  private static Optional<String> plan(ConsoleBrowser browser, String budget, String masked) {
    return browser.driver().findElements(By.cssSelector(
            "section.budget[data-budget='" + budget + "'] tr.tenant[data-key='" + masked + "'] td.plan"))
        .stream().findFirst().map(WebElement::getText);
  }

  private int send(int port, String key) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/routed"))
        .header("Authorization", "Bearer " + key)
        .timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  /** The stand-in endpoint over the real one. */
  @Configuration(proxyBeanMethods = false)
  static class StandIn {

    @Bean
    PlansEndpointStandIn plansEndpointStandIn(RateLimitEnforcer enforcer) {
      return new PlansEndpointStandIn(
          new RateLimiterEndpoint(enforcer.store(), enforcer.policies(), KeyIds.random(), 20, 1000));
    }
  }
}
