package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandType;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * One of the store's Lua scripts: {@code lib.lua} followed by one algorithm's file, read once from
 * the classpath and invoked by its SHA-1 with {@code EVALSHA} (arguments as {@link ScriptArgs}).
 * When a server does not know the
 * script ({@code NOSCRIPT}: after {@code SCRIPT FLUSH}, a restart or a failover) it is sent once
 * with {@code EVAL}, which also caches it there, so callers never see the error.
 */
final class LuaScript {

  private static final String LIB = "lib.lua";

  final String name;
  final String source;
  final String sha;

  private LuaScript(String name, String source) {
    this.name = name;
    this.source = source;
    this.sha = sha1(source);
  }

  /** Loads {@code lib.lua} and {@code <name>} from this package's resources. */
  static LuaScript load(String name) {
    return new LuaScript(name, resource(LIB) + "\n" + resource(name));
  }

  /**
   * Runs the script on the node that owns the keys' slot, with {@code ARGV[1]} the packed {@code
   * numbers} and then the first {@code levelCount} packed {@code levels}; the reply is read by an
   * output from {@code output} (a fresh one for each try).
   */
  <T> T run(RedisClusterCommands<String, String> redis, Supplier<CommandOutput<String, String, T>> output,
      String[] keys, double[] numbers, byte[][] levels, int levelCount) {
    try {
      return redis.dispatch(CommandType.EVALSHA, output.get(),
          new ScriptArgs(sha, keys, numbers, levels, levelCount));
    } catch (RedisNoScriptException e) {
      return eval(redis, output, keys, numbers, levels, levelCount);
    } catch (RedisCommandExecutionException e) {
      if (e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT")) {
        return eval(redis, output, keys, numbers, levels, levelCount);
      }
      throw e;
    }
  }

  /**
   * Sends the script like {@link #run} without waiting: the future completes with the reply, after
   * a second send with the source if the server did not know the script.
   */
  <T> CompletableFuture<T> submit(RedisClusterAsyncCommands<String, String> redis,
      Supplier<CommandOutput<String, String, T>> output, String[] keys, double[] numbers,
      byte[][] levels, int levelCount) {
    CompletableFuture<T> sent = redis.dispatch(CommandType.EVALSHA, output.get(),
        new ScriptArgs(sha, keys, numbers, levels, levelCount)).toCompletableFuture();
    return sent.exceptionallyCompose(e -> {
      Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (cause instanceof RedisNoScriptException || (cause instanceof RedisCommandExecutionException
          && cause.getMessage() != null && cause.getMessage().startsWith("NOSCRIPT"))) {
        return redis.dispatch(CommandType.EVAL, output.get(),
            new ScriptArgs(source, keys, numbers, levels, levelCount)).toCompletableFuture();
      }
      return CompletableFuture.failedFuture(cause);
    });
  }

  /** Sends the source, which the server also caches; after a {@code NOSCRIPT} only. */
  private <T> T eval(RedisClusterCommands<String, String> redis,
      Supplier<CommandOutput<String, String, T>> output, String[] keys, double[] numbers,
      byte[][] levels, int levelCount) {
    return redis.dispatch(CommandType.EVAL, output.get(),
        new ScriptArgs(source, keys, numbers, levels, levelCount));
  }

  /** An output for a reply that is an array of integers and strings, such as {@code {}}. */
  static Supplier<CommandOutput<String, String, List<Object>>> list() {
    return () -> new NestedMultiOutput<>(StringCodec.UTF8);
  }

  private static String resource(String file) {
    try (InputStream in = LuaScript.class.getResourceAsStream(file)) {
      if (in == null) {
        throw new IllegalStateException("missing classpath resource " + file + " next to " + LuaScript.class.getName());
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  private static String sha1(String text) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-1");
      return HexFormat.of().formatHex(md.digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is required of every Java platform", e);
    }
  }
}
