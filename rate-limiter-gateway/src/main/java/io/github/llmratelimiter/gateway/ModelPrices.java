package io.github.llmratelimiter.gateway;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The price table that turns a call's model tokens into its cost, in integer micro-units of the
 * operator's currency (1,000,000 micro-units to the unit; the library names no currency).
 *
 * <p>Prices are per million tokens. A call's cost is {@code (prompt - cached) x input + cached x
 * cachedInput + completion x output}, divided by one million and rounded up once per call to the
 * micro-unit, computed on integers: no floating point, so the costs of many calls sum exactly. Its
 * estimate before the call is its estimated tokens at the highest of the model's prices, an upper
 * bound of what any split of those tokens costs. Immutable and thread-safe.
 */
public final class ModelPrices {

  private static final ModelPrices NONE = new ModelPrices(Map.of(), null);
  private static final long PER_MILLION = 1_000_000L;
  private static final BigInteger MILLION = BigInteger.valueOf(PER_MILLION);
  private static final BigInteger MAX = BigInteger.valueOf(Long.MAX_VALUE);

  private final Map<String, Price> models;
  private final @Nullable Price defaultPrice;

  private ModelPrices(Map<String, Price> models, @Nullable Price defaultPrice) {
    this.models = models;
    this.defaultPrice = defaultPrice;
  }

  /**
   * Returns a table without prices: every call costs 0.
   *
   * @return the empty table
   */
  public static ModelPrices none() {
    return NONE;
  }

  /**
   * Returns a table of prices by model, with a price for the models it does not name.
   *
   * @param models the price of each model, by its name as requests name it
   * @param defaultPrice the price of every other model, or {@code null} for none (such a call
   *     costs 0)
   * @return the table
   * @throws IllegalArgumentException if {@code models} is null or holds a blank name or a null price
   */
  public static ModelPrices of(Map<String, Price> models, @Nullable Price defaultPrice) {
    if (models == null) {
      throw new IllegalArgumentException("models must not be null");
    }
    Map<String, Price> copy = new LinkedHashMap<>();
    models.forEach((model, price) -> {
      if (model == null || model.isBlank() || price == null) {
        throw new IllegalArgumentException("every model must have a name and a price, but '"
            + model + "' had " + price);
      }
      copy.put(model, price);
    });
    return new ModelPrices(java.util.Collections.unmodifiableMap(copy), defaultPrice);
  }

  /**
   * Returns the price of a model: its own, else the default price.
   *
   * @param model the model, or {@code null} when the call names none
   * @return the price, or {@code null} when the model has none and there is no default
   */
  public @Nullable Price price(@Nullable String model) {
    Price own = model == null ? null : models.get(model);
    return own != null ? own : defaultPrice;
  }

  /**
   * Returns the prices by model, without the default.
   *
   * @return the prices, unmodifiable
   */
  public Map<String, Price> models() {
    return models;
  }

  /**
   * Returns the price of the models the table does not name.
   *
   * @return the default price, or {@code null}
   */
  public @Nullable Price defaultPrice() {
    return defaultPrice;
  }

  /**
   * Returns the cost of a call from its usage: itemized, {@code (prompt - cached) x input + cached
   * x cachedInput + completion x output}; a total alone, at the higher of the input and output
   * prices; per million tokens, rounded up to the micro-unit.
   *
   * @param model the call's model, or {@code null}
   * @param usage what the call consumed
   * @return the cost in micro-units, 0 for a model without a price; at most {@link Long#MAX_VALUE}
   * @throws IllegalArgumentException if {@code usage} is null
   */
  public long cost(@Nullable String model, ModelUsage usage) {
    if (usage == null) {
      throw new IllegalArgumentException("usage must not be null");
    }
    Price p = price(model);
    if (p == null) {
      return 0;
    }
    if (!usage.itemized()) {
      return perMillion(usage.totalTokens(), Math.max(p.input(), p.output()));
    }
    long uncached = usage.promptTokens() - usage.cachedTokens();
    try {
      return perMillion(Math.addExact(Math.addExact(Math.multiplyExact(uncached, p.input()),
          Math.multiplyExact(usage.cachedTokens(), p.cachedInput())),
          Math.multiplyExact(usage.completionTokens(), p.output())));
    } catch (ArithmeticException beyondLong) {
      BigInteger sum = BigInteger.valueOf(uncached).multiply(BigInteger.valueOf(p.input()))
          .add(BigInteger.valueOf(usage.cachedTokens()).multiply(BigInteger.valueOf(p.cachedInput())))
          .add(BigInteger.valueOf(usage.completionTokens()).multiply(BigInteger.valueOf(p.output())));
      return perMillion(sum);
    }
  }

  /**
   * Returns the cost a call is estimated at before it runs: its estimated model tokens at the
   * highest of its model's prices, per million tokens, rounded up. No split of those tokens into
   * prompt, cached and completion costs more.
   *
   * @param model the call's model, or {@code null}
   * @param estimatedTokens the estimated model tokens, at least 0
   * @return the estimate in micro-units, 0 for a model without a price
   * @throws IllegalArgumentException if the estimate is negative
   */
  public long estimate(@Nullable String model, long estimatedTokens) {
    if (estimatedTokens < 0) {
      throw new IllegalArgumentException(
          "estimatedTokens must be >= 0, but was " + estimatedTokens);
    }
    Price p = price(model);
    if (p == null) {
      return 0;
    }
    long highest = Math.max(p.input(), Math.max(p.output(), p.cachedInput()));
    return perMillion(estimatedTokens, highest);
  }

  /** Tokens times micro-units, per million tokens, rounded up, capped at Long.MAX_VALUE. */
  private static long perMillion(long tokens, long micros) {
    long product;
    try {
      product = Math.multiplyExact(tokens, micros);
    } catch (ArithmeticException beyondLong) {
      return perMillion(BigInteger.valueOf(tokens).multiply(BigInteger.valueOf(micros)));
    }
    return perMillion(product);
  }

  /** Micro-units times tokens, per million tokens, rounded up (as {@link #perMillion(BigInteger)}). */
  private static long perMillion(long microTimesTokens) {
    long quotient = microTimesTokens / PER_MILLION;
    return microTimesTokens % PER_MILLION > 0 ? quotient + 1 : quotient;
  }

  /** Micro-units times tokens, per million tokens, rounded up, capped at Long.MAX_VALUE. */
  private static long perMillion(BigInteger microTimesTokens) {
    BigInteger[] qr = microTimesTokens.divideAndRemainder(MILLION);
    BigInteger cost = qr[1].signum() > 0 ? qr[0].add(BigInteger.ONE) : qr[0];
    return cost.compareTo(MAX) > 0 ? Long.MAX_VALUE : cost.longValueExact();
  }

  @Override
  public String toString() {
    return "ModelPrices[models=" + models + ", default=" + defaultPrice + "]";
  }

  /**
   * The price of one model per million tokens, in micro-units of the operator's currency.
   *
   * @param input the price of a million prompt tokens not served from the cache
   * @param output the price of a million completion tokens
   * @param cachedInput the price of a million cached prompt tokens
   */
  public record Price(long input, long output, long cachedInput) {

    /**
     * Validates the prices.
     *
     * @throws IllegalArgumentException if a price is negative
     */
    public Price {
      nonNegative("input", input);
      nonNegative("output", output);
      nonNegative("cachedInput", cachedInput);
    }

    /**
     * Returns the price of amounts of currency per million tokens, each with at most 6 decimals.
     *
     * @param input the input price
     * @param output the output price
     * @param cachedInput the cached-input price, or {@code null} for the input price
     * @return the price in micro-units
     * @throws IllegalArgumentException if a price is null (but {@code cachedInput}), negative, has
     *     more than 6 decimals or does not fit a long in micro-units
     */
    public static Price of(BigDecimal input, BigDecimal output, @Nullable BigDecimal cachedInput) {
      long in = micros("input", input);
      return new Price(in, micros("output", output),
          cachedInput == null ? in : micros("cachedInput", cachedInput));
    }

    /**
     * Returns an amount of currency in micro-units.
     *
     * @param name the amount's name, for the message
     * @param amount the amount, at least 0, at most 6 decimals
     * @return the micro-units
     * @throws IllegalArgumentException if the amount is null, negative, has more than 6 decimals
     *     or does not fit a long in micro-units
     */
    public static long micros(String name, BigDecimal amount) {
      if (amount == null) {
        throw new IllegalArgumentException(name + " must not be null");
      }
      if (amount.signum() < 0) {
        throw new IllegalArgumentException(name + " must be >= 0, but was " + amount.toPlainString());
      }
      BigDecimal scaled = amount.movePointRight(6);
      try {
        return scaled.stripTrailingZeros().scale() > 0 ? fail(name, amount)
            : scaled.longValueExact();
      } catch (ArithmeticException e) {
        throw new IllegalArgumentException(name + " must fit " + Long.MAX_VALUE
            + " micro-units, but was " + amount.toPlainString(), e);
      }
    }

    private static long fail(String name, BigDecimal amount) {
      throw new IllegalArgumentException(name + " must have at most 6 decimals, but was "
          + amount.toPlainString());
    }
  }

  private static void nonNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, but was " + value);
    }
  }
}
