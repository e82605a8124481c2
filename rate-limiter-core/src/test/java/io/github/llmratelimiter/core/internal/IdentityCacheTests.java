package io.github.llmratelimiter.core.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class IdentityCacheTests {

  @Test
  void findsAValueByItsKeysIdentityOnly() {
    IdentityCache<List<String>, String> cache = new IdentityCache<>(4);
    List<String> key = new ArrayList<>(List.of("a"));
    List<String> equal = new ArrayList<>(List.of("a"));
    assertThat(cache.find(key)).isNull();
    cache.put(key, "value");
    assertThat(cache.find(key)).isEqualTo("value");
    assertThat(cache.find(equal)).isNull(); // equal, but another instance
  }

  @Test
  void keepsTheMostRecentEntriesOnly() {
    IdentityCache<Object, Integer> cache = new IdentityCache<>(3);
    Object[] keys = {new Object(), new Object(), new Object(), new Object()};
    for (int i = 0; i < keys.length; i++) {
      cache.put(keys[i], i);
    }
    assertThat(cache.find(keys[0])).isNull(); // the oldest left
    assertThat(cache.find(keys[1])).isEqualTo(1);
    assertThat(cache.find(keys[2])).isEqualTo(2);
    assertThat(cache.find(keys[3])).isEqualTo(3);
  }

  @Test
  void keepsAKeyOnceWhenPutAgain() {
    IdentityCache<Object, Integer> cache = new IdentityCache<>(2);
    Object a = new Object();
    Object b = new Object();
    cache.put(a, 1);
    cache.put(b, 2);
    cache.put(b, 2); // a racing thread's second put must not push a out
    assertThat(cache.find(a)).isEqualTo(1);
    assertThat(cache.find(b)).isEqualTo(2);
  }

  @Test
  void refusesASizeBelowOne() {
    assertThatIllegalArgumentException().isThrownBy(() -> new IdentityCache<>(0))
        .withMessage("size must be >= 1, but was 0");
  }
}
