package io.github.llmratelimiter.autoconfigure.slices;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Keeps the "Testing your limits" examples of docs/testing.md true: they must be {@link
 * ChatController} and {@link ChatLimitsTests} as compiled and run here, less their package lines and
 * Javadoc comments.
 */
class ReadmeExampleTests {

  private static final Path PAGE = Path.of("..", "docs", "testing.md");
  private static final Path SOURCES = Path.of("src/test/java/io/github/llmratelimiter/autoconfigure/slices");

  @Test
  void theTestingSectionsExamplesAreTheClassesThatRun() throws IOException {
    String readme = Files.readString(PAGE, StandardCharsets.UTF_8);
    int section = readme.indexOf("# Testing your limits\n");
    assertThat(section).as("the section of docs/testing.md").isNotNegative();
    int controller = readme.indexOf("```java\n", section) + "```java\n".length();
    int test = readme.indexOf("```java\n", controller) + "```java\n".length();
    assertThat(block(readme, controller)).isEqualTo(compiled("ChatController.java"));
    assertThat(block(readme, test)).isEqualTo(compiled("ChatLimitsTests.java"));
  }

  private static String block(String readme, int start) {
    return readme.substring(start, readme.indexOf("```\n", start));
  }

  /** A source as docs/testing.md shows it: without its package line and Javadoc comments. */
  private static String compiled(String file) throws IOException {
    String source = Files.readString(SOURCES.resolve(file), StandardCharsets.UTF_8);
    String body = source.substring(source.indexOf('\n', source.indexOf("package ")) + 1);
    return body.replaceAll("(?s)\n[ \t]*/\\*\\*.*?\\*/", "").strip() + "\n";
  }
}
