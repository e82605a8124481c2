package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.internal.KeyMasking;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.openqa.selenium.By;
import org.openqa.selenium.WebElement;

/**
 * The operator's console driven in a real headless browser against a running gateway: a subclass
 * names the console's URL and how to send one rate-limited call and to track many keys. A tenant
 * sent past its limit rises to the top of a budget's table, marked denied; the chart draws the
 * denials; a reset (confirmed in the page's dialog; a cancelled one changes nothing) empties the
 * tenant's row; no API key is ever in the page or in any URL it requests. With 10,000 tracked keys
 * the page lists the top entries only and says how many are tracked.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractConsoleBrowserTests {

  /** The chart's height in its SVG view box. */
  private static final double CHART_HEIGHT = 180;

  private ConsoleBrowser browser;

  /**
   * Returns the console's URL.
   *
   * @return the URL
   */
  protected abstract String consoleUrl();

  /**
   * Sends one rate-limited call with an API key.
   *
   * @param apiKey the key
   * @return the response's status
   * @throws Exception when the call fails
   */
  protected abstract int send(String apiKey) throws Exception;

  /**
   * Makes the store track many more keys, each charged once.
   *
   * @param count how many keys
   * @param prefix their common prefix
   */
  protected abstract void track(int count, String prefix);

  /**
   * Returns the browser.
   *
   * @return the browser
   */
  protected ConsoleBrowser browser() {
    return browser;
  }

  @BeforeAll
  void startBrowser() {
    browser = ConsoleBrowser.start();
  }

  @AfterAll
  void closeBrowser() {
    if (browser != null) {
      browser.close();
    }
  }

  @Test
  void aDeniedTenantRisesToTheTopTheChartMovesAndAResetChangesItsRow() throws Exception {
    String calm = "sk-console-calm-tenant-4c4c";
    String busy = "sk-console-busy-tenant-b0b1";
    String masked = KeyMasking.mask(busy);
    browser.open(consoleUrl());
    browser.keepAllRequests();
    assertThat(send(calm)).isEqualTo(200);
    int denials = 0;
    for (int i = 0; i < 100 && denials < 3; i++) {
      if (send(busy) == 429) {
        denials++;
      }
    }
    assertThat(denials).as("denials of the busy tenant").isEqualTo(3);

    String budget = browser.await("the denied tenant first in a budget's table", d -> topDenied(masked));
    assertThat(browser.tables().get(budget).get(0).text()).contains(masked);
    browser.await("the chart to draw the denials", d -> deniedPeak() > 0);
    assertThat(browser.driver().findElements(By.cssSelector("#legend li[data-series^='denied']")))
        .as("the legend names the denials").isNotEmpty();
    int samples = chartSamples();
    browser.await("the chart to take more samples", d -> chartSamples() > samples);

    // a tenant's detail on click
    String id = browser.tables().get(budget).get(0).id();
    assertThat(id).as("the tenant's id").isNotBlank();
    browser.click(By.cssSelector("section.budget[data-budget='" + budget + "'] tr.tenant[data-id='" + id + "']"));
    browser.await("the tenant's detail", d -> masked.equals(browser.text(By.id("detail-key"))));
    assertThat(browser.driver().findElements(By.cssSelector("#detail-budgets .budget"))).isNotEmpty();
    assertThat(browser.driver().findElement(By.id("reset")).isDisplayed()).as("the reset, granted").isTrue();
    boolean plans = browser.driver().findElement(By.id("detail-plan")).isDisplayed();
    assertThat(plans).as("the endpoint's detail shows the key's plan (the app declares plans)").isTrue();
    assertThat(browser.driver().findElement(By.id("plan-form")).isDisplayed())
        .as("a plan's change, offered where the endpoint shows the plan and grants writes").isTrue();

    // a cancelled reset changes nothing
    browser.click(By.id("reset"));
    browser.await("the confirmation", d -> d.findElement(By.id("confirm")).isDisplayed());
    assertThat(browser.text(By.id("confirm-text"))).contains(masked);
    browser.click(By.id("confirm-cancel"));
    browser.awaitFreshPoll();
    assertThat(topDenied(masked)).as("still denied after a cancelled reset").isEqualTo(budget);

    // a confirmed one resets the tenant: its row leaves the table, or shows it within its limits
    browser.click(By.id("reset"));
    browser.await("the confirmation", d -> d.findElement(By.id("confirm")).isDisplayed());
    browser.click(By.id("confirm-ok"));
    browser.await("the tenant's row to change", d -> row(budget, masked).map(r -> !r.denied()).orElse(true));
    assertThat(send(busy)).as("the reset tenant is admitted again").isEqualTo(200);
    browser.await("the tenant back, within its limits", d -> row(budget, masked).filter(r -> !r.denied())
        .isPresent());

    // never a key in clear: not in the page, not in any URL it requested
    browser.awaitFreshPoll();
    String page = browser.driver().getPageSource();
    List<String> urls = browser.requestedUrls();
    assertThat(urls).as("the page's requests").anyMatch(u -> u.contains("/ratelimiter/"));
    for (String key : List.of(calm, busy)) {
      String secret = key.substring(0, key.length() - 4);
      assertThat(page).doesNotContain(secret);
      assertThat(urls).noneMatch(u -> u.contains(secret));
    }
  }

  @Test
  void tenThousandTrackedKeysShowOnlyTheTopEntries() {
    track(10_000, "sk-console-many-");
    browser.open(consoleUrl());
    browser.awaitFreshPoll();
    List<WebElement> counts = browser.driver().findElements(By.cssSelector("section.budget h3 .count"));
    long tracked = counts.stream().mapToLong(c -> Long.parseLong(c.getDomAttribute("data-tracked"))).max()
        .orElse(0);
    assertThat(tracked).as("the most keys a budget tracks").isGreaterThanOrEqualTo(10_000);
    assertThat(counts).anyMatch(c -> c.getText().contains("top 10 shown"));
    for (WebElement section : browser.driver().findElements(By.cssSelector("section.budget"))) {
      assertThat(section.findElements(By.cssSelector("tbody tr.tenant"))).hasSizeLessThanOrEqualTo(10);
    }
    Map<String, String> data = browser.bodyData();
    long pollMs = Long.parseLong(data.get("pollMs"));
    System.out.printf("console at 10,000 tracked keys: %d keys in a budget, one refresh took %d ms%n",
        tracked, pollMs);
  }

  /** The budget whose first row is the denied tenant, or null. */
  private String topDenied(String masked) {
    for (Map.Entry<String, List<ConsoleBrowser.Row>> table : browser.tables().entrySet()) {
      ConsoleBrowser.Row first = table.getValue().get(0);
      if (masked.equals(first.key()) && first.denied()) {
        return table.getKey();
      }
    }
    return null;
  }

  private Optional<ConsoleBrowser.Row> row(String budget, String masked) {
    return browser.tables().getOrDefault(budget, List.of()).stream().filter(r -> masked.equals(r.key()))
        .findFirst();
  }

  private int chartSamples() {
    return Integer.parseInt(browser.driver().findElement(By.id("chart")).getDomAttribute("data-samples"));
  }

  /** The highest point of the denial series, in chart units above the axis (0 when flat). */
  private double deniedPeak() {
    double peak = 0;
    for (WebElement line : browser.driver().findElements(By.cssSelector("#chart polyline[data-series^='denied']"))) {
      String points = line.getDomAttribute("points");
      List<Double> ys = new ArrayList<>();
      for (String point : points == null || points.isBlank() ? new String[0] : points.trim().split(" ")) {
        ys.add(Double.parseDouble(point.substring(point.indexOf(',') + 1)));
      }
      for (double y : ys) {
        peak = Math.max(peak, CHART_HEIGHT - y);
      }
    }
    return peak;
  }
}
