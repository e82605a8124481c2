package io.github.llmratelimiter.autoconfigure.slices;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Keeps the README's "Testing your limits" example true: it must be {@link ChatLimitsTest} as
 * compiled and run here, less its package line.
 */
class ReadmeExampleTests {

  private static final Path README = Path.of("..", "README.md");
  private static final Path EXAMPLE =
      Path.of("src/test/java/io/github/llmratelimiter/autoconfigure/slices/ChatLimitsTest.java");

  @Test
  void theTestingSectionsExampleIsTheTestThatRuns() throws IOException {
    String readme = Files.readString(README, StandardCharsets.UTF_8);
    int section = readme.indexOf("\n### Testing your limits\n");
    assertThat(section).as("the README's section").isPositive();
    int start = readme.indexOf("```java\n", section) + "```java\n".length();
    String shown = readme.substring(start, readme.indexOf("```\n", start));
    String source = Files.readString(EXAMPLE, StandardCharsets.UTF_8);
    String compiled = source.substring(source.indexOf('\n', source.indexOf("package ")) + 1).strip() + "\n";
    assertThat(shown).isEqualTo(compiled);
  }
}
