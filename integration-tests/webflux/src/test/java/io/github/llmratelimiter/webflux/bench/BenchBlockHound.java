package io.github.llmratelimiter.webflux.bench;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Exceptions;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * BlockHound in a reactive gateway that a benchmark launches in a JVM of its own (started with
 * {@code -XX:+AllowRedefinitionToAddDeleteMethods}): {@link #install()} installs it with every
 * integration on the class path (Reactor's, Netty's, the limiter's) and proves it active before
 * the application starts; the configuration adds {@code GET} {@value #PROBE_PATH}, a handler that
 * blocks its event loop, so that the benchmark can prove BlockHound active on the server's threads
 * too.
 *
 * <p>A blocking call on a non-blocking thread throws {@link BlockingOperationError} there (the
 * request fails) and prints to standard error a line that starts with {@value #CAUGHT}, which
 * the benchmark counts in the gateway's log, and the call's stack.
 */
@Configuration(proxyBeanMethods = false)
public class BenchBlockHound {

  /** The start of the line printed for every blocking call caught. */
  public static final String CAUGHT = "BlockHound caught ";

  /** The line printed once BlockHound is installed and proven to catch a blocking call. */
  public static final String ACTIVE =
      "BlockHound is active: a blocking call on a Reactor parallel thread was caught";

  /** The path of the handler that blocks its event loop. */
  public static final String PROBE_PATH = "/bench/blockhound-probe";

  private static volatile boolean selfCheck;

  /** Creates the configuration (Spring does). */
  public BenchBlockHound() {}

  /**
   * Installs BlockHound and checks that it catches a blocking call on a Reactor parallel thread.
   *
   * @throws IllegalStateException if the call was not caught (BlockHound is not active)
   */
  public static void install() {
    BlockHound.install(builder -> allowAllocatorLocks(builder)
        .blockingMethodCallback(method -> {
          BlockingOperationError error = new BlockingOperationError(method);
          if (!selfCheck) {
            StringWriter trace = new StringWriter();
            error.printStackTrace(new PrintWriter(trace));
            System.err.println(CAUGHT + method + " on thread " + Thread.currentThread().getName()
                + "\n" + trace);
          }
          throw error;
        }));
    selfCheck = true;
    try {
      Mono.fromCallable(() -> {
        Thread.yield();
        return "not caught";
      }).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10));
    } catch (RuntimeException e) {
      if (Exceptions.unwrap(e) instanceof BlockingOperationError
          || e.getCause() instanceof BlockingOperationError) {
        System.err.println(ACTIVE);
        return;
      }
      throw e;
    } finally {
      selfCheck = false;
    }
    throw new IllegalStateException("BlockHound is not active: Thread.yield() on a Reactor "
        + "parallel thread was not caught (is -XX:+AllowRedefinitionToAddDeleteMethods set?)");
  }

  /**
   * The handler that blocks its event loop: under BlockHound it fails with a 500 and one line
   * starting with {@value #CAUGHT}.
   *
   * @return the route of {@value #PROBE_PATH}
   */
  @Bean
  RouterFunction<ServerResponse> blockHoundProbe() {
    return RouterFunctions.route().GET(PROBE_PATH, request -> {
      Thread.yield();
      return ServerResponse.ok().bodyValue("not caught");
    }).build();
  }

  /**
   * Allows the locks of Netty's adaptive buffer allocator: it takes a magazine's {@code
   * StampedLock} when it grows its array of magazines under contention, a lock held for a few
   * instructions, not I/O (Netty's own integration allows only its thread-local set-up). Caught,
   * the error thrown on Lettuce's event loop would break the store's connection under a busy test.
   *
   * @param builder BlockHound's builder
   * @return the same builder
   */
  public static BlockHound.Builder allowAllocatorLocks(BlockHound.Builder builder) {
    return builder
        .allowBlockingCallsInside(
            "io.netty.buffer.AdaptivePoolingAllocator$MagazineGroup", "tryExpandMagazines")
        .allowBlockingCallsInside("io.netty.buffer.AdaptivePoolingAllocator$Magazine", "free");
  }
}
