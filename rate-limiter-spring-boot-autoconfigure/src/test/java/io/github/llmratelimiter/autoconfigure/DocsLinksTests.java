package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every relative link of the documentation pages ({@link DocPages}) leads somewhere: to a file that
 * exists and, with a {@code #anchor}, to a heading of the target page that GitHub gives that anchor
 * (lower case, punctuation other than '-' and '_' dropped, each space a '-', and "-1", "-2", ... for
 * a repeated heading).
 */
class DocsLinksTests {

  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
  private static final Pattern HEADING = Pattern.compile("^#{1,6}\\s+(.*?)\\s*#*\\s*$");
  private static final Pattern FENCE = Pattern.compile("^\\s*(```|~~~)");

  @Test
  void everyRelativeLinkLeadsToAFileAndHeadingThatExist() throws IOException {
    List<String> broken = new ArrayList<>();
    int checked = 0;
    for (Path page : DocPages.all()) {
      for (String target : links(read(page))) {
        if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
          continue; // https:, mailto: and the like
        }
        checked++;
        String problem = problem(page, target);
        if (problem != null) {
          broken.add(page + ": " + target + " (" + problem + ")");
        }
      }
    }
    assertThat(checked).as("relative links found").isGreaterThan(50);
    assertThat(broken).as("broken links").isEmpty();
  }

  @Test
  void anchorsFollowGitHubsRule() {
    assertThat(anchors("# Configure limits in `application.yml`\n## Watch it\n## Watch it\n"))
        .containsExactly("configure-limits-in-applicationyml", "watch-it", "watch-it-1");
    assertThat(anchors("## Who pays: the key and the model of a request\n"))
        .containsExactly("who-pays-the-key-and-the-model-of-a-request");
    assertThat(anchors("### The operator's console\n```\n# not a heading\n```\n"))
        .containsExactly("the-operators-console");
    assertThat(anchors("## Reactive (WebFlux) and Spring Cloud Gateway\n## max_tokens\n"))
        .containsExactly("reactive-webflux-and-spring-cloud-gateway", "max_tokens");
  }

  @Test
  void aBrokenLinkIsReported() throws IOException {
    assertThat(problem(Path.of("README.md"), "docs/no-such-page.md")).contains("no file");
    assertThat(problem(Path.of("README.md"), "docs/redis.md#no-such-heading"))
        .contains("no heading");
    assertThat(problem(Path.of("README.md"), "#no-such-heading")).contains("no heading");
    assertThat(problem(Path.of("docs", "redis.md"), "../README.md#set-up")).isNull();
  }

  /** Why a link of a page does not lead anywhere, or null when it does. */
  private static String problem(Path page, String target) throws IOException {
    int hash = target.indexOf('#');
    String file = hash < 0 ? target : target.substring(0, hash);
    Path resolved = file.isEmpty() ? page : page.resolveSibling(file).normalize();
    if (!Files.exists(DocPages.ROOT.resolve(resolved))) {
      return "no file " + resolved;
    }
    if (hash < 0) {
      return null;
    }
    String anchor = target.substring(hash + 1);
    if (!resolved.toString().endsWith(".md")) {
      return "an anchor in a file that is not a page";
    }
    return anchors(read(resolved)).contains(anchor) ? null : "no heading of " + resolved;
  }

  private static String read(Path page) throws IOException {
    return Files.readString(DocPages.ROOT.resolve(page), StandardCharsets.UTF_8);
  }

  /** The link targets of a page, outside code blocks and inline code. */
  private static List<String> links(String markdown) {
    List<String> targets = new ArrayList<>();
    for (String line : prose(markdown)) {
      Matcher m = LINK.matcher(line.replaceAll("`[^`]*`", "``"));
      while (m.find()) {
        targets.add(m.group(1));
      }
    }
    return targets;
  }

  /** The anchors GitHub gives the headings of a page, in order. */
  static Set<String> anchors(String markdown) {
    Set<String> anchors = new LinkedHashSet<>();
    Map<String, Integer> seen = new HashMap<>();
    for (String line : prose(markdown)) {
      Matcher m = HEADING.matcher(line);
      if (m.matches()) {
        String base = m.group(1).toLowerCase(Locale.ROOT)
            .replaceAll("[^\\p{L}\\p{M}\\p{N}\\p{Pc} -]", "")
            .replace(' ', '-');
        int n = seen.merge(base, 1, Integer::sum) - 1;
        anchors.add(n == 0 ? base : base + "-" + n);
      }
    }
    return anchors;
  }

  /** The lines of a page outside fenced code blocks. */
  private static List<String> prose(String markdown) {
    List<String> lines = new ArrayList<>();
    boolean code = false;
    for (String line : markdown.split("\n", -1)) {
      if (FENCE.matcher(line).find()) {
        code = !code;
      } else if (!code) {
        lines.add(line);
      }
    }
    return lines;
  }
}
