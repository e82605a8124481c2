package io.github.llmratelimiter.gateway;

/**
 * One response header as data: a front door adds it to its response as it is, so every stack sends
 * the same bytes.
 *
 * @param name the header's name, a non-empty HTTP token
 * @param value the header's value, without line breaks
 */
public record ResponseHeader(String name, String value) {

  /**
   * Validates the header.
   *
   * @throws IllegalArgumentException if the name is empty or not a token, or the value is null or
   *     holds a line break or another control character but a tab
   */
  public ResponseHeader {
    if (name == null || name.isEmpty() || !name.chars().allMatch(ResponseHeader::isTokenChar)) {
      throw new IllegalArgumentException("name must be an HTTP token, but was '" + name + "'");
    }
    if (value == null || value.chars().anyMatch(c -> (c < 0x20 && c != '\t') || c == 0x7f)) {
      throw new IllegalArgumentException(
          "value of header '" + name + "' must be set and hold no control character");
    }
  }

  private static boolean isTokenChar(int c) {
    return c > 0x20 && c < 0x7f && "\"(),/:;<=>?@[\\]{}".indexOf(c) < 0;
  }
}
