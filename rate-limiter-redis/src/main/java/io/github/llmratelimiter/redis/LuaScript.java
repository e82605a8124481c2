package io.github.llmratelimiter.redis;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.api.sync.RedisClusterCommands;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * One of the store's Lua scripts: {@code lib.lua} followed by one algorithm's file, read once from
 * the classpath and invoked by its SHA-1 with {@code EVALSHA}. When a server does not know the
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

  /** Runs the script on the node that owns the keys' slot; the reply is an array. */
  List<Object> run(RedisClusterCommands<String, String> redis, String[] keys, String... args) {
    try {
      return redis.evalsha(sha, ScriptOutputType.MULTI, keys, args);
    } catch (RedisNoScriptException e) {
      return redis.eval(source, ScriptOutputType.MULTI, keys, args);
    } catch (RedisCommandExecutionException e) {
      if (e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT")) {
        return redis.eval(source, ScriptOutputType.MULTI, keys, args);
      }
      throw e;
    }
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
