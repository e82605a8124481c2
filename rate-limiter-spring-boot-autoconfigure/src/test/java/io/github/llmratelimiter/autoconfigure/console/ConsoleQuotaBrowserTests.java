package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.autoconfigure.ManualTicker;
import io.github.llmratelimiter.autoconfigure.stacks.AbstractWebStackScenarioTests;
import io.github.llmratelimiter.core.Budget;
import io.github.llmratelimiter.core.Composition;
import io.github.llmratelimiter.core.Consumption;
import io.github.llmratelimiter.core.QuotaLimit;
import io.github.llmratelimiter.core.QuotaPeriod;
import io.github.llmratelimiter.core.QuotaUnit;
import io.github.llmratelimiter.core.RateLimitStore;
import io.github.llmratelimiter.core.WindowLimit;
import io.github.llmratelimiter.gateway.KeyScope;
import io.github.llmratelimiter.gateway.RateLimitKey;
import io.github.llmratelimiter.gateway.RateLimitPolicies;
import io.github.llmratelimiter.gateway.RateLimitPolicy;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * The console's quotas, over the real endpoint and an in-memory store whose wall clock stands
 * still: a section per quota lists its top spenders, most first, masked, with the spend against
 * the limit (cost as the endpoint's exact decimal) and the reset time; a shadow quota is marked;
 * a tenant's detail shows each of its quotas with a bar and the reset time.
 */
class ConsoleQuotaBrowserTests {

  private static final String ALICE = "sk-console-quota-alice-a1a1";
  private static final String BOB = "sk-console-quota-bob-b2b2";

  /** The store's wall clock: the test's start, to the second, standing still. */
  private static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.SECONDS);

  private static final Budget CHAT = new Budget("chat", WindowLimit.perMinute(100), null, null, null,
      List.of(QuotaLimit.of("daily-cost", QuotaUnit.COST, 50_000_000, QuotaPeriod.DAY),
          QuotaLimit.of("monthly-tokens", QuotaUnit.TOKENS, 1000, QuotaPeriod.MONTH).enforced(false)),
      null);

  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class App {

    @Bean
    RateLimitPolicies consoleQuotaPolicies() {
      return RateLimitPolicies.builder(Composition.RESERVE_COMMIT)
          .policy("chat", KeyScope.API_KEY, CHAT).defaultPolicy("chat").build();
    }

    @Bean
    RateLimitStore consoleQuotaStore() {
      return RateLimitStore.inMemory(new ManualTicker(), () -> NOW, 10_000,
          task -> new CompletableFuture<>());
    }
  }

  @Test
  void theConsoleShowsTopSpendersPerQuotaAndATenantsQuotasWithTheirReset() throws Exception {
    try (ConfigurableApplicationContext app = new SpringApplicationBuilder(App.class)
        .web(WebApplicationType.SERVLET).run("--server.port=0", "--ratelimiter.console.enabled=true",
            "--ratelimiter.console.refresh=1s", "--management.endpoints.web.exposure.include=ratelimiter");
        ConsoleBrowser browser = ConsoleBrowser.start()) {
      RateLimitStore store = app.getBean(RateLimitStore.class);
      RateLimitPolicy chat = app.getBean(RateLimitPolicies.class).policy("chat");
      for (int i = 0; i < 3; i++) {
        charge(store, chat, ALICE, 400, 4_115_226);
      }
      charge(store, chat, BOB, 10, 1_500_000);
      int port = AbstractWebStackScenarioTests.port(app);
      browser.open("http://127.0.0.1:" + port + "/ratelimiter/console");
      browser.await("the spenders", d -> d.findElement(By.id("spenders-panel")).isDisplayed());

      // the console re-renders its panels on every poll: each panel is read whole in one attempt,
      // which is tried again when a poll replaced an element meanwhile
      Map<String, String> top = browser.await("the spenders per quota", d -> {
        WebElement cost = d.findElement(By.cssSelector("section.quota-top[data-quota='daily-cost']"));
        List<WebElement> rows = cost.findElements(By.cssSelector("tbody tr.spender"));
        WebElement tokens = d.findElement(By.cssSelector("section.quota-top[data-quota='monthly-tokens']"));
        List<WebElement> tokenRows = tokens.findElements(By.cssSelector("tbody tr.spender"));
        if (rows.size() < 2 || tokenRows.isEmpty()) {
          return null;
        }
        Map<String, String> read = new LinkedHashMap<>();
        read.put("periodEnd", cost.getAttribute("data-period-end"));
        read.put("heading", cost.findElement(By.tagName("h3")).getText());
        read.put("keys", rows.stream().map(r -> r.getAttribute("data-key")).toList().toString());
        read.put("spent0", rows.get(0).findElement(By.cssSelector("td.spent")).getText());
        read.put("left0", rows.get(0).findElement(By.cssSelector("td.left")).getText());
        read.put("spent1", rows.get(1).findElement(By.cssSelector("td.spent")).getText());
        read.put("fraction0", rows.get(0).findElement(By.cssSelector(".bar")).getAttribute("data-fraction"));
        read.put("tokensShadow", String.valueOf(tokens.findElements(By.cssSelector("h3 .badge.shadow")).size()));
        read.put("costShadow", String.valueOf(cost.findElements(By.cssSelector("h3 .badge.shadow")).size()));
        read.put("tokensSpent0", tokenRows.get(0).findElement(By.cssSelector("td.spent")).getText());
        read.put("tokensClass0", tokenRows.get(0).getAttribute("class"));
        return read;
      });
      assertThat(top.get("periodEnd"))
          .isEqualTo(QuotaPeriod.DAY.end(NOW, java.time.ZoneOffset.UTC).toString());
      assertThat(top.get("heading"))
          .contains("chat · daily-cost · cost per day", "limit 50.00", "resets ")
          .containsPattern("\\(in (\\d+ h( \\d+ min)?|\\d+ min)\\)");
      assertThat(top.get("keys")).isEqualTo("[****a1a1, ****b2b2]");
      assertThat(top.get("spent0")).isEqualTo("12.345678 / 50.00");
      assertThat(top.get("left0")).isEqualTo("37.654322");
      assertThat(top.get("spent1")).isEqualTo("1.50 / 50.00");
      assertThat(top.get("fraction0")).isEqualTo("0.247");
      assertThat(top.get("tokensShadow")).isEqualTo("1");
      assertThat(top.get("costShadow")).isEqualTo("0");
      assertThat(top.get("tokensSpent0")).isEqualTo("1,200 tokens / 1,000 tokens");
      assertThat(top.get("tokensClass0")).contains("denied");

      // the tenant's detail: each quota with a bar and its reset
      browser.click(By.cssSelector("section.quota-top[data-quota='daily-cost'] tr.spender[data-key='****a1a1']"));
      Map<String, String> detail = browser.await("the tenant's quotas", d -> {
        if (!d.findElement(By.id("detail-quotas")).isDisplayed()) {
          return null;
        }
        List<WebElement> quotas = d.findElements(By.cssSelector("#detail-quotas tr.quota"));
        if (quotas.size() < 2) {
          return null;
        }
        Map<String, String> read = new LinkedHashMap<>();
        read.put("names", quotas.stream().map(q -> q.getAttribute("data-quota")).toList().toString());
        read.put("spent0", quotas.get(0).findElement(By.cssSelector(".spent")).getText());
        read.put("reset0", quotas.get(0).findElement(By.cssSelector(".reset")).getText());
        read.put("class1", quotas.get(1).getAttribute("class"));
        read.put("shadow1", String.valueOf(quotas.get(1).findElements(By.cssSelector(".badge.shadow")).size()));
        return read;
      });
      assertThat(detail.get("names")).isEqualTo("[daily-cost, monthly-tokens]");
      assertThat(detail.get("spent0")).isEqualTo("12.345678 / 50.00");
      assertThat(detail.get("reset0"))
          .startsWith("resets ").containsPattern("\\(in (\\d+ h( \\d+ min)?|\\d+ min)\\)");
      assertThat(detail.get("class1")).contains("exceeded");
      assertThat(detail.get("shadow1")).isEqualTo("1");
      assertThat(browser.driver().getPageSource()).doesNotContain("sk-console-quota-alice");
      assertThat(browser.requestedUrls()).noneMatch(u -> u.contains("sk-console-quota"));
    }
  }

  private static void charge(RateLimitStore store, RateLimitPolicy chat, String apiKey, long tokens,
      long spend) {
    RateLimitKey key = RateLimitKey.of(apiKey, null);
    assertThat(store.reserve(chat.budgets(key), chat.keys(key), 1, new Consumption(1, tokens, spend),
        Composition.RESERVE_COMMIT).decision().allowed()).isTrue();
  }
}
