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
 * The README's compiled examples: each {@code java} code block that follows a comment {@code <!--
 * compiled: <file>#<tag> -->} is, line for line (indentation aside), the region between {@code //
 * tag::<tag>[]} and {@code // end::<tag>[]} of that test file, which the build compiles and runs.
 */
class ReadmeExamplesTests {

  private static final Path ROOT = Path.of("..");
  private static final Pattern EXAMPLE = Pattern.compile(
      "<!-- compiled: (\\S+)#(\\S+) -->\\s*```java\\n(.*?)```", Pattern.DOTALL);

  @Test
  void everyCompiledExampleOfTheReadmeIsItsTaggedRegion() throws Exception {
    String readme = Files.readString(ROOT.resolve("README.md"));
    Matcher m = EXAMPLE.matcher(readme);
    List<String> checked = new ArrayList<>();
    while (m.find()) {
      String source = Files.readString(ROOT.resolve(m.group(1)));
      String tag = m.group(2);
      int start = source.indexOf("// tag::" + tag + "[]");
      int end = source.indexOf("// end::" + tag + "[]");
      assertThat(start).as(m.group(1) + " has the region " + tag).isNotNegative();
      assertThat(end).as(m.group(1) + " ends the region " + tag).isGreaterThan(start);
      String region = source.substring(source.indexOf('\n', start) + 1, source.lastIndexOf('\n', end) + 1);
      assertThat(dedent(m.group(3))).as("the README's example " + tag + " (edit the test, then the README)")
          .isEqualTo(dedent(region));
      checked.add(tag);
    }
    assertThat(checked).contains("charge", "render", "after-the-fact");
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
