package io.github.llmratelimiter.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/properties.md} is what the build's configuration metadata gives, and the metadata has
 * a hint for every enum-like property, listing exactly the values that bind.
 */
class PropertiesDocTests {

  @Test
  void docsPropertiesMdIsGeneratedFromTheBuildsMetadata() throws Exception {
    String rendered = PropertiesDoc.render(PropertiesDoc.metadata());
    if (Boolean.getBoolean(PropertiesDoc.WRITE)) {
      PropertiesDoc.main(new String[0]);
    }
    String page = Files.exists(PropertiesDoc.PAGE)
        ? Files.readString(PropertiesDoc.PAGE, StandardCharsets.UTF_8) : "(missing)";
    assertThat(page)
        .as("docs/properties.md is stale: regenerate it from the repository's root with%n  %s%n",
            PropertiesDoc.REGENERATE)
        .isEqualTo(rendered);
  }

  @Test
  @SuppressWarnings("unchecked")
  void everyPropertyOfTheMetadataIsDocumentedWithItsDescription() throws Exception {
    Map<String, Object> metadata = PropertiesDoc.metadata();
    String rendered = PropertiesDoc.render(metadata);
    List<Object> properties = (List<Object>) metadata.get("properties");
    assertThat(properties).hasSizeGreaterThan(40);
    for (Object p : properties) {
      Map<String, Object> property = (Map<String, Object>) p;
      assertThat(rendered).contains("| `" + property.get("name") + "` |");
      if (((String) property.get("name")).startsWith("ratelimiter.")) {
        assertThat(property.get("description")).as(property.get("name") + " has a description")
            .isNotNull();
      }
    }
    assertThat(rendered).contains("| `ratelimiter.composition` | Composition | `reserve-commit` |",
        "Values: `reserve-commit`, `sequential`.", "Keys, for example: `per-key`, `chat`, or any other.");
  }

  @Test
  @SuppressWarnings("unchecked")
  void everyEnumPropertyHasAHintWithExactlyTheValuesThatBind() throws Exception {
    Map<String, Object> metadata = PropertiesDoc.metadata();
    Map<String, List<String>> hinted = new LinkedHashMap<>();
    for (Object h : (List<Object>) metadata.get("hints")) {
      Map<String, Object> hint = (Map<String, Object>) h;
      List<String> values = new ArrayList<>();
      for (Object v : (List<Object>) hint.getOrDefault("values", List.of())) {
        values.add((String) ((Map<String, Object>) v).get("value"));
      }
      hinted.put((String) hint.get("name"), values);
    }
    int enums = 0;
    for (Object p : (List<Object>) metadata.get("properties")) {
      Map<String, Object> property = (Map<String, Object>) p;
      String name = (String) property.get("name");
      Class<?> type = loadable((String) property.get("type"));
      if (type == null || !type.isEnum() || !name.startsWith("ratelimiter.")) {
        continue;
      }
      enums++;
      List<String> constants = new ArrayList<>();
      for (Object constant : type.getEnumConstants()) {
        constants.add(((Enum<?>) constant).name().toLowerCase(Locale.ROOT).replace('_', '-'));
      }
      assertThat(hinted).as("a hint for the enum property " + name).containsKey(name);
      assertThat(hinted.get(name)).as(name).containsExactlyInAnyOrderElementsOf(constants);
    }
    assertThat(enums).as("enum properties checked").isGreaterThanOrEqualTo(6);
    assertThat(hinted).containsKeys("ratelimiter.policies.keys", "ratelimiter.models.keys");
  }

  private static Class<?> loadable(String type) {
    if (type == null || type.contains("<")) {
      return null;
    }
    try {
      return Class.forName(type);
    } catch (ClassNotFoundException e) {
      return null;
    }
  }
}
