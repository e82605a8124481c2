package io.github.llmratelimiter.autoconfigure.console;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * A headless Chromium driven through Selenium: Debian's {@code chromium} and {@code chromedriver}
 * (or the paths in {@code CHROMIUM} and {@code CHROMEDRIVER}). Where they are missing, a test fails
 * under CI (the {@code CI} environment variable is set, and CI installs them) and is skipped with a
 * message elsewhere. One browser serves a whole test class.
 */
public final class ConsoleBrowser implements AutoCloseable {

  private static final Duration WAIT = Duration.ofSeconds(30);

  private final ChromeDriver driver;

  private ConsoleBrowser(ChromeDriver driver) {
    this.driver = driver;
  }

  /**
   * Starts a headless browser, or skips (fails under CI) when Chromium or its driver is missing.
   *
   * @return the browser
   */
  public static ConsoleBrowser start() {
    File chromium = new File(env("CHROMIUM", "/usr/bin/chromium"));
    File chromedriver = new File(env("CHROMEDRIVER", "/usr/bin/chromedriver"));
    if (!chromium.canExecute() || !chromedriver.canExecute()) {
      String message = "The console's browser tests need Chromium and its driver (" + chromium + ", "
          + chromedriver + "): apt-get install -y chromium chromium-driver";
      if (System.getenv("CI") != null) {
        Assertions.fail(message + " (.ci/run installs them)");
      }
      Assumptions.abort(message);
    }
    ChromeOptions options = new ChromeOptions();
    options.setBinary(chromium);
    options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--window-size=1400,1000", "--hide-scrollbars", "--force-device-scale-factor=1");
    ChromeDriverService service = new ChromeDriverService.Builder()
        .usingDriverExecutable(chromedriver).usingAnyFreePort().build();
    return new ConsoleBrowser(new ChromeDriver(service, options));
  }

  private static String env(String name, String otherwise) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? otherwise : value;
  }

  /**
   * Returns the driver.
   *
   * @return the driver
   */
  public WebDriver driver() {
    return driver;
  }

  /**
   * Opens the console and waits for its first refresh.
   *
   * @param url the console's URL
   */
  public void open(String url) {
    driver.get(url);
    await("the console's first refresh", d -> polls() >= 1);
    assertThat(text(By.id("status"))).as("the status line").doesNotContain("HTTP");
  }

  /**
   * Returns how many refreshes the page has made.
   *
   * @return the count
   */
  public int polls() {
    String polls = driver.findElement(By.tagName("body")).getDomAttribute("data-polls");
    return polls == null ? 0 : Integer.parseInt(polls);
  }

  /**
   * Waits until the page has made more refreshes than now, then one more (so that a refresh started
   * after this call has ended).
   */
  public void awaitFreshPoll() {
    int now = polls();
    await("two more refreshes", d -> polls() >= now + 2);
  }

  /**
   * Waits, bounded, until a condition holds.
   *
   * @param what what the test waits for, for the failure message
   * @param condition the condition, null or false while it does not hold
   * @param <T> its value's type
   * @return its value
   */
  public <T> T await(String what, Function<WebDriver, T> condition) {
    return new WebDriverWait(driver, WAIT, Duration.ofMillis(100)).withMessage(what)
        .ignoring(StaleElementReferenceException.class).until(condition);
  }

  /**
   * Returns an element's text.
   *
   * @param by the element
   * @return its text
   */
  public String text(By by) {
    return driver.findElement(by).getText();
  }

  /**
   * Clicks an element, found again if the page rebuilt it meanwhile.
   *
   * @param by the element
   */
  public void click(By by) {
    await("to click " + by, d -> {
      d.findElement(by).click();
      return true;
    });
  }

  /**
   * Returns the tenants' tables as shown, read in one step (the page rebuilds them on every refresh).
   *
   * @return per budget, its rows first first
   */
  @SuppressWarnings("unchecked")
  public Map<String, List<Row>> tables() {
    List<Map<String, Object>> rows = (List<Map<String, Object>>) ((JavascriptExecutor) driver).executeScript(
        "return [...document.querySelectorAll('#budgets section.budget tbody tr.tenant')].map(r => ({"
            + "budget: r.closest('section').dataset.budget, key: r.dataset.key, id: r.dataset.id || null,"
            + "denied: r.classList.contains('denied'), text: r.innerText}));");
    Map<String, List<Row>> tables = new LinkedHashMap<>();
    for (Map<String, Object> r : rows) {
      tables.computeIfAbsent((String) r.get("budget"), b -> new ArrayList<>()).add(new Row(
          (String) r.get("key"), (String) r.get("id"), Boolean.TRUE.equals(r.get("denied")), (String) r.get("text")));
    }
    return tables;
  }

  /**
   * One tenant's row.
   *
   * @param key the masked key shown
   * @param id the id, or null
   * @param denied whether the row is marked denied
   * @param text the row's text
   */
  public record Row(String key, String id, boolean denied, String text) {}

  /**
   * Returns every URL the page has requested so far (the browser's resource timing entries).
   *
   * @return the URLs
   */
  @SuppressWarnings("unchecked")
  public List<String> requestedUrls() {
    return (List<String>) ((JavascriptExecutor) driver).executeScript(
        "return [location.href].concat(performance.getEntries().map(e => e.name));");
  }

  /**
   * Lets the page keep more resource timing entries than the default 250.
   */
  public void keepAllRequests() {
    ((JavascriptExecutor) driver).executeScript("performance.setResourceTimingBufferSize(100000);");
  }

  /**
   * Returns the page's body data attributes.
   *
   * @return the attributes, by name without {@code data-}
   */
  @SuppressWarnings("unchecked")
  public Map<String, String> bodyData() {
    return (Map<String, String>) ((JavascriptExecutor) driver).executeScript(
        "return Object.assign({}, document.body.dataset);");
  }

  /**
   * Writes a screenshot of the page as a PNG.
   *
   * @param file where to write it
   * @throws IOException when it cannot be written
   */
  public void screenshot(Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.write(file, driver.getScreenshotAs(OutputType.BYTES));
  }

  @Override
  public void close() {
    driver.quit();
  }
}
