package io.github.llmratelimiter.autoconfigure.console;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The console's answers, the same on every web stack: the page at {@value #PATH} (and {@code
 * PATH/}), its script and its style sheet, each a fixed resource of this jar read once; any other
 * path under {@code PATH/} is a 404 problem and any method but GET and HEAD a 405 problem. The page
 * carries the endpoint's paths (under the request's context path) and the write operations it
 * grants in data attributes, HTML-escaped; every answer forbids framing, sniffing and referrers, and
 * the page's content security policy lets it load and call only its own origin.
 */
final class ConsolePage {

  /** The console's path under the management server's context path. */
  static final String PATH = "/ratelimiter/console";

  private static final String RESOURCES = "io/github/llmratelimiter/autoconfigure/console/";
  private static final String HTML = "text/html;charset=UTF-8";
  private static final String PROBLEM = "application/problem+json";
  private static final String POLICY = "default-src 'none'; script-src 'self'; style-src 'self';"
      + " img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none';"
      + " frame-ancestors 'none'";

  private final String template;
  private final Map<String, Answer> assets = new LinkedHashMap<>();
  private final ConsoleLinks links;
  private final long refreshMillis;

  /**
   * Reads the page's resources.
   *
   * @param links the endpoint's paths and write operations
   * @param refreshMillis how often the page refreshes, in milliseconds
   */
  ConsolePage(ConsoleLinks links, long refreshMillis) {
    this.links = links;
    this.refreshMillis = refreshMillis;
    this.template = new String(read("index.html"), StandardCharsets.UTF_8);
    assets.put(PATH + "/console.js", asset(read("console.js"), "text/javascript;charset=UTF-8"));
    assets.put(PATH + "/console.css", asset(read("console.css"), "text/css;charset=UTF-8"));
  }

  /**
   * Whether a path (within the application's context path) is the console's.
   *
   * @param path the request's path without its context path
   * @return whether the console answers it
   */
  static boolean owns(String path) {
    return path.equals(PATH) || path.startsWith(PATH + "/");
  }

  /**
   * Answers a request for one of the console's paths.
   *
   * @param method the request's method
   * @param path the request's path without its context path
   * @param contextPath the request's context path, empty for none
   * @return the answer
   */
  Answer answer(String method, String path, String contextPath) {
    boolean page = path.equals(PATH) || path.equals(PATH + "/");
    Answer asset = assets.get(path);
    if (!owns(path) || links.endpoint() == null || (!page && asset == null)) {
      return problem(404, "Not Found", "The console has no resource at this path.");
    }
    if (!method.equals("GET") && !method.equals("HEAD")) {
      return problem(405, "Method Not Allowed", "The console answers GET and HEAD only.", "Allow", "GET, HEAD");
    }
    return page ? page(links, contextPath) : asset;
  }

  private Answer page(ConsoleLinks l, String contextPath) {
    String html = template
        .replace("{{base}}", escape(contextPath + PATH))
        .replace("{{endpoint}}", escape(contextPath + l.endpoint()))
        .replace("{{metrics}}", l.metrics() == null ? "" : escape(contextPath + l.metrics()))
        .replace("{{health}}", l.health() == null ? "" : escape(contextPath + l.health()))
        .replace("{{reset}}", Boolean.toString(l.reset()))
        .replace("{{assign}}", Boolean.toString(l.assign()))
        .replace("{{refresh}}", Long.toString(refreshMillis));
    return new Answer(200, HTML, html.getBytes(StandardCharsets.UTF_8),
        headers("Content-Security-Policy", POLICY, "Cache-Control", "no-store"));
  }

  private static Answer asset(byte[] body, String contentType) {
    return new Answer(200, contentType, body, headers("Cache-Control", "no-cache"));
  }

  /** A problem answer; its detail and title are constants of this class, not request input. */
  private static Answer problem(int status, String title, String detail, String... moreHeaders) {
    String json = "{\"detail\":\"" + detail + "\",\"status\":" + status + ",\"title\":\"" + title + "\"}";
    return new Answer(status, PROBLEM, json.getBytes(StandardCharsets.UTF_8), headers(moreHeaders));
  }

  /** The headers of every answer, then more, as name and value pairs. */
  private static Map<String, String> headers(String... more) {
    Map<String, String> h = new LinkedHashMap<>();
    h.put("X-Content-Type-Options", "nosniff");
    h.put("X-Frame-Options", "DENY");
    h.put("Referrer-Policy", "no-referrer");
    for (int i = 0; i + 1 < more.length; i += 2) {
      h.put(more[i], more[i + 1]);
    }
    return h;
  }

  /** Escapes text for an HTML attribute value in double quotes. */
  static String escape(String text) {
    StringBuilder b = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }

  private static byte[] read(String name) {
    try (InputStream in = ConsolePage.class.getClassLoader().getResourceAsStream(RESOURCES + name)) {
      if (in == null) {
        throw new IllegalStateException("The console resource " + RESOURCES + name + " is missing");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * One answer of the console.
   *
   * @param status the HTTP status
   * @param contentType the body's media type
   * @param body the body (not sent for HEAD)
   * @param headers more response headers
   */
  record Answer(int status, String contentType, byte[] body, Map<String, String> headers) {

    Answer {
      if (status < 100 || status > 599) {
        throw new IllegalArgumentException("status must be an HTTP status, was " + status);
      }
      headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    }
  }

  /**
   * What the page needs to know of the Actuator endpoints, under the management server's context path.
   *
   * @param endpoint the path of the endpoint {@code ratelimiter}, or null when it is not exposed
   * @param metrics the path of the endpoint {@code metrics}, or null when it is not exposed
   * @param health the path of the endpoint {@code health}, or null when it is not exposed
   * @param reset whether the endpoint grants its reset ({@code DELETE})
   * @param assign whether the endpoint grants a plan's assignment ({@code POST})
   */
  record ConsoleLinks(@Nullable String endpoint, @Nullable String metrics, @Nullable String health,
      boolean reset, boolean assign) {}
}
