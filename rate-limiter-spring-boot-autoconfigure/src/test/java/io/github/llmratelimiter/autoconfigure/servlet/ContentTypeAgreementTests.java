package io.github.llmratelimiter.autoconfigure.servlet;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.llmratelimiter.gateway.internal.HttpFields;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.http.MediaType;

/**
 * The limiter reads a content type as Spring does: the same media type (JSON or a form, whatever its
 * parameters say) and the same charset (quoted semicolons, repeated and differently cased names),
 * so that the body it parses is the body the handler's JSON reader parses.
 */
class ContentTypeAgreementTests {

  private static final Set<String> UNICODE = Set.of("UTF-8", "UTF-16", "UTF-16BE", "UTF-16LE",
      "UTF-32", "UTF-32BE", "UTF-32LE");

  @ParameterizedTest
  @ValueSource(strings = {
      "application/json",
      "application/json;charset=IBM037",
      "application/json; charset=\"IBM037\"",
      "application/json; x=\"a;charset=IBM037\"",
      "application/json; x=\"a;charset=IBM037\"; charset=utf-8",
      "application/json; charset=IBM037; CHARSET=utf-8",
      "application/json; charset=utf-8; Charset=IBM037",
      "application/json; charset=UTF-16LE",
      "application/json;charset=ISO-8859-1",
      "APPLICATION/JSON ; charset = IBM037 ",
      "application/json; x=\"application/x-www-form-urlencoded\"",
      "application/x-www-form-urlencoded; x=\"application/json\"",
      "application/vnd.openai+json; charset=IBM500",
      "text/plain; x=json",
      "multipart/form-data; boundary=x",
      "application/jsonl"})
  void theMediaTypeAndTheCharsetAreSpringsOwn(String contentType) {
    MediaType spring = MediaType.parseMediaType(contentType); // every case is one Spring reads
    boolean json = spring.getSubtype().equals("json") || spring.getSubtype().endsWith("+json");
    boolean form = spring.isCompatibleWith(MediaType.APPLICATION_FORM_URLENCODED)
        || spring.getType().equals("multipart");
    assertThat(HttpFields.isJson(contentType)).as("JSON").isEqualTo(json);
    assertThat(HttpFields.isForm(contentType)).as("form").isEqualTo(form);

    Charset declared = spring.getCharset();
    for (byte[] body : List.of("{\"model\":\"gpt-4o\"}".getBytes(StandardCharsets.UTF_8),
        "{\"model\":\"gpt-4o\"}".getBytes(Charset.forName("IBM037")))) {
      byte[] expected = declared == null || UNICODE.contains(declared.name()) ? body
          : new String(body, declared).getBytes(StandardCharsets.UTF_8);
      assertThat(HttpFields.jsonAsRead(body, contentType)).as("charset").isEqualTo(expected);
    }
  }
}
