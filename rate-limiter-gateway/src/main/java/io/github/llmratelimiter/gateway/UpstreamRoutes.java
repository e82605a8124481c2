package io.github.llmratelimiter.gateway;

import io.github.llmratelimiter.core.Upstream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Which {@link Upstream} a call goes to, from its policy and its model: each upstream names the
 * models it serves, as globs ({@code gpt-4o*}: {@code *} matches any run of characters, every
 * other character itself, case-sensitive), and the policies whose calls it takes.
 *
 * <p>A call whose model matches a glob goes to that glob's upstream; when several globs match, the
 * longest glob wins (the most specific), and of equally long ones the first declared. A call whose
 * model matches no glob goes to the upstream that names its policy. A call that matches neither has
 * no upstream: it is decided on its own levels only. A glob or a policy belongs to at most one
 * upstream.
 *
 * <p>Immutable and thread-safe; {@link #route} allocates nothing.
 */
public final class UpstreamRoutes {

  /** Routes that send no call anywhere: no upstream is configured. */
  public static final UpstreamRoutes NONE = new Builder().build();

  private final Map<String, Upstream> upstreams;
  private final Map<String, Upstream> byPolicy;
  /** The globs, longest first (equals in declaration order), each with its upstream. */
  private final Glob[] globs;

  private record Glob(String pattern, Upstream upstream) {}

  private UpstreamRoutes(Builder b) {
    this.upstreams = Map.copyOf(b.upstreams);
    this.byPolicy = Map.copyOf(b.byPolicy);
    List<Glob> sorted = new ArrayList<>(b.globs);
    sorted.sort((x, y) -> Integer.compare(y.pattern.length(), x.pattern.length()));
    this.globs = sorted.toArray(Glob[]::new);
  }

  /**
   * Starts routes.
   *
   * @return an empty builder
   */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * Returns the upstream a call goes to.
   *
   * @param policy the name of the call's policy
   * @param model the model the call names, or {@code null} when it names none
   * @return the upstream, or {@code null} when the call matches no upstream
   */
  public @Nullable Upstream route(String policy, @Nullable String model) {
    if (upstreams.isEmpty()) {
      return null;
    }
    if (model != null) {
      for (Glob g : globs) {
        if (matches(g.pattern, model)) {
          return g.upstream;
        }
      }
    }
    return byPolicy.get(policy);
  }

  /**
   * Returns a configured upstream by its name.
   *
   * @param name the upstream's name
   * @return the upstream, or empty when none has that name
   */
  public Optional<Upstream> upstream(String name) {
    return Optional.ofNullable(name == null ? null : upstreams.get(name));
  }

  /**
   * Returns every configured upstream, by name.
   *
   * @return the upstreams, unmodifiable
   */
  public Map<String, Upstream> upstreams() {
    return upstreams;
  }

  /**
   * Returns whether no upstream is configured.
   *
   * @return whether every call goes to no upstream
   */
  public boolean isEmpty() {
    return upstreams.isEmpty();
  }

  /**
   * Tells whether a model glob matches a model: {@code *} matches any run of characters
   * (including none), every other character itself.
   *
   * @param glob the glob
   * @param model the model
   * @return whether it matches
   */
  static boolean matches(String glob, String model) {
    int g = 0;
    int m = 0;
    int star = -1;
    int resume = 0;
    while (m < model.length()) {
      if (g < glob.length() && glob.charAt(g) == '*') {
        star = g++;
        resume = m;
      } else if (g < glob.length() && glob.charAt(g) == model.charAt(m)) {
        g++;
        m++;
      } else if (star >= 0) {
        g = star + 1;
        m = ++resume;
      } else {
        return false;
      }
    }
    while (g < glob.length() && glob.charAt(g) == '*') {
      g++;
    }
    return g == glob.length();
  }

  /** Builds {@link UpstreamRoutes}. */
  public static final class Builder {

    private final Map<String, Upstream> upstreams = new LinkedHashMap<>();
    private final Map<String, Upstream> byPolicy = new LinkedHashMap<>();
    private final List<Glob> globs = new ArrayList<>();

    private Builder() {}

    /**
     * Adds an upstream with the model globs and the policies whose calls go to it.
     *
     * @param upstream the upstream
     * @param models the globs of the models it serves, none blank
     * @param policies the names of the policies whose calls it takes
     * @return this builder
     * @throws IllegalArgumentException if an argument is null, the upstream's name is taken, a glob
     *     is blank or a glob or a policy belongs to another upstream already
     */
    public Builder upstream(Upstream upstream, Collection<String> models,
        Collection<String> policies) {
      if (upstream == null || models == null || policies == null) {
        throw new IllegalArgumentException("upstream, models and policies must not be null");
      }
      if (upstreams.containsKey(upstream.name())) {
        throw new IllegalArgumentException(
            "upstream '" + upstream.name() + "' is declared twice");
      }
      for (String glob : models) {
        if (glob == null || glob.isBlank()) {
          throw new IllegalArgumentException("a model glob of upstream '" + upstream.name()
              + "' must not be blank, but was '" + glob + "'");
        }
        for (Glob g : globs) {
          if (g.pattern.equals(glob)) {
            throw new IllegalArgumentException("model glob '" + glob + "' belongs to upstream '"
                + g.upstream.name() + "' and upstream '" + upstream.name() + "'");
          }
        }
      }
      for (String policy : policies) {
        if (policy == null || policy.isBlank()) {
          throw new IllegalArgumentException("a policy of upstream '" + upstream.name()
              + "' must not be blank, but was '" + policy + "'");
        }
        Upstream other = byPolicy.get(policy);
        if (other != null) {
          throw new IllegalArgumentException("policy '" + policy + "' belongs to upstream '"
              + other.name() + "' and upstream '" + upstream.name() + "'");
        }
      }
      upstreams.put(upstream.name(), upstream);
      for (String glob : models) {
        globs.add(new Glob(glob, upstream));
      }
      for (String policy : policies) {
        byPolicy.put(policy, upstream);
      }
      return this;
    }

    /**
     * Builds the routes.
     *
     * @return the routes
     */
    public UpstreamRoutes build() {
      return new UpstreamRoutes(this);
    }
  }
}
