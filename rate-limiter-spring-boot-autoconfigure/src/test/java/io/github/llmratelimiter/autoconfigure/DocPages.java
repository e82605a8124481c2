package io.github.llmratelimiter.autoconfigure;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** The documentation pages: the README, every page under docs/, and the sample's README. */
final class DocPages {

  /** The repository's root, seen from this module's directory, where the tests run. */
  static final Path ROOT = Path.of("..");

  private DocPages() {}

  /** The pages, as paths relative to the repository's root. */
  static List<Path> all() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(Path.of("README.md"));
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.getFileName().toString().endsWith(".md"))
          .map(p -> Path.of("docs", p.getFileName().toString()))
          .sorted()
          .forEach(pages::add);
    }
    pages.add(Path.of("sample-app", "README.md"));
    return pages;
  }
}
