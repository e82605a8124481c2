package io.github.llmratelimiter.benchmarks.redis;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The floor of a decision's own commands: a script that runs exactly the Redis commands a decision
 * of the store runs on the common path ({@code TIME}, the level's {@code GETRANGE} of its first
 * 4 KB and {@code SET}, and for model tokens the reservation counter's {@code INCR} and the
 * model-token window's {@code GETRANGE} and {@code SET}) with the decision's number of keys and
 * arguments of its sizes, and returns a reply of the decision's size, doing nothing else; or the
 * same call that runs no command; or the first after the store's {@code lib.lua}, which every
 * script of the store runs on every call before its own part (with these arguments it reads the
 * call's first numbers and defines its constants and functions, running no command), and with
 * model tokens after its model-token functions too, which a decision creates on every call of a
 * level that limits them. What the
 * decision costs above the first is its script's own work; above the last, its work past its
 * definitions.
 */
final class CommandFloor {

  /** The bytes of the call's numbers (ARGV[1]) of a decision without an upstream or quotas. */
  static final int CALL_ARGUMENT_BYTES = 120;
  /** The bytes of one level's numbers (ARGV[2]): nine doubles. */
  static final int LEVEL_ARGUMENT_BYTES = 72;
  /** The level's numbers: as many bytes as the store sends. */
  private static final String LEVEL_ARGUMENTS = "\0".repeat(LEVEL_ARGUMENT_BYTES);
  /** The store's shared script, which runs before each of its scripts' own part. */
  private static final String LIBRARY = "/io/github/llmratelimiter/redis/lib.lua";
  /**
   * Creates {@code lib.lua}'s model-token functions, as every decision of a level that limits
   * model tokens does on each call.
   */
  private static final String MODEL_TOKEN_FUNCTIONS = "modelTokens()\n";
  /** The length of a tenant's hashed key part, as the store's keys name it ({@code #} and 22). */
  private static final int TENANT_CHARS = 23;

  private final String script;
  private final boolean modelTokens;
  private final String[][] keys;
  private final String argumentsWithCommands;
  private final String argumentsOnly;
  private String sha;

  private CommandFloor(String resource, boolean modelTokens, boolean library, int keyCount) {
    this.script = (library ? resource(LIBRARY) + "\n" + (modelTokens ? MODEL_TOKEN_FUNCTIONS : "")
        : "") + resource(resource);
    this.modelTokens = modelTokens;
    this.keys = new String[keyCount][];
    for (int i = 0; i < keyCount; i++) {
      keys[i] = keysOf(i);
    }
    char[] call = new char[CALL_ARGUMENT_BYTES];
    Arrays.fill(call, '\0');
    argumentsWithCommands = new String(call);
    call[0] = '\u0001';
    argumentsOnly = new String(call);
  }

  /** The commands of a window + bucket decision over {@code keyCount} keys. */
  static CommandFloor windowAndBucket(int keyCount) {
    return new CommandFloor("commands-window-bucket.lua", false, false, keyCount);
  }

  /** The commands of a window + bucket + model tokens reservation over {@code keyCount} keys. */
  static CommandFloor modelTokens(int keyCount) {
    return new CommandFloor("commands-model-tokens.lua", true, false, keyCount);
  }

  /** The commands of a window + bucket decision after the store's {@code lib.lua}. */
  static CommandFloor windowAndBucketAfterLibrary(int keyCount) {
    return new CommandFloor("commands-window-bucket.lua", false, true, keyCount);
  }

  /**
   * The commands of a window + bucket + model tokens reservation after {@code lib.lua} and its
   * model-token functions.
   */
  static CommandFloor modelTokensAfterLibrary(int keyCount) {
    return new CommandFloor("commands-model-tokens.lua", true, true, keyCount);
  }

  /** Loads the script on the server {@code commands} talk to. */
  void load(RedisCommands<String, String> commands) {
    sha = commands.scriptLoad(script);
  }

  /**
   * Runs the script for key {@code key} (an index below the key count).
   *
   * @param withCommands whether the script runs the decision's commands, or only takes the call's
   *     keys and arguments and replies
   * @throws IllegalStateException if the reply is not of the decision's size
   */
  void call(RedisCommands<String, String> commands, int key, boolean withCommands) {
    String reply = commands.evalsha(sha, ScriptOutputType.VALUE, keys[key],
        withCommands ? argumentsWithCommands : argumentsOnly, LEVEL_ARGUMENTS);
    if (reply == null || reply.length() != 95) {
      throw new IllegalStateException("the command floor's script answered " + reply);
    }
  }

  /** The keys of a decision for tenant {@code i}, named and sized as the store names them. */
  private String[] keysOf(int i) {
    String tenant = "#" + String.format("%022d", i);
    String budget = modelTokens ? "bench-model-tokens" : "default";
    String prefix = "rl:{" + tenant + "}:" + budget + ":" + tenant;
    String top = "rl:{~}:" + budget + ":~top:10000000000000:0";
    String tracked = "rl:{~}:" + budget + ":~keys:10000000000000:0";
    if (tenant.length() != TENANT_CHARS) {
      throw new IllegalStateException(tenant);
    }
    return modelTokens
        ? new String[] {prefix + ":s", prefix + ":t", top, tracked, "rl:{" + tenant + "}:seq"}
        : new String[] {prefix + ":s", top, tracked};
  }

  private static String resource(String name) {
    try (InputStream in = CommandFloor.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("no resource " + name);
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
