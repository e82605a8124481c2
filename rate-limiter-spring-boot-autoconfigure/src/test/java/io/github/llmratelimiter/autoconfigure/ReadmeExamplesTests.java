package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The compiled examples of the documentation pages ({@link DocPages}: the README, docs/*.md and the
 * sample's README): each {@code java} code block that follows a comment {@code <!-- compiled:
 * <file>#<tag> -->} is, line for line (indentation aside), the region between {@code //
 * tag::<tag>[]} and {@code // end::<tag>[]} of that test file, which the build compiles and runs.
 */
class ReadmeExamplesTests {

  private static final Path ROOT = DocPages.ROOT;
  private static final Pattern EXAMPLE = Pattern.compile(
      "<!-- compiled: (\\S+)#(\\S+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

  @Test
  void everyCompiledExampleOfTheDocsIsItsTaggedRegion() throws Exception {
    List<String> checked = new ArrayList<>();
    for (Path page : DocPages.all()) {
      checked.addAll(check(page));
    }
    assertThat(checked).contains("charge", "render", "after-the-fact", "chat-client", "spring-ai-call");
  }

  /** Checks the compiled examples of one page; gives their tags. */
  private static List<String> check(Path page) throws Exception {
    Matcher m = EXAMPLE.matcher(Files.readString(ROOT.resolve(page)));
    List<String> checked = new ArrayList<>();
    while (m.find()) {
      String source = Files.readString(ROOT.resolve(m.group(1)));
      String tag = m.group(2);
      int start = source.indexOf("// tag::" + tag + "[]");
      int end = source.indexOf("// end::" + tag + "[]");
      assertThat(start).as(m.group(1) + " has the region " + tag).isNotNegative();
      assertThat(end).as(m.group(1) + " ends the region " + tag).isGreaterThan(start);
      String region = source.substring(source.indexOf('\n', start) + 1, source.lastIndexOf('\n', end) + 1);
      assertThat(dedent(m.group(3)))
          .as(page + "'s example " + tag + " (edit the test, then " + page + ")")
          .isEqualTo(dedent(region));
      checked.add(tag);
    }
    return checked;
  }

  /** The lines without their common indentation. */
  private static String dedent(String text) {
    List<String> lines = text.lines().toList();
    int indent = lines.stream().filter(l -> !l.isBlank())
        .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
    StringBuilder sb = new StringBuilder();
    for (String l : lines) {
      sb.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
    }
    return sb.toString();
  }
}
