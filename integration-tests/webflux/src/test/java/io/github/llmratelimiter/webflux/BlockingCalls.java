package io.github.llmratelimiter.webflux;

import io.github.llmratelimiter.webflux.bench.BenchBlockHound;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;

/**
 * Installs BlockHound once, when the test JVM's launcher session opens (before any test class is
 * loaded), with every integration on the class path (Reactor's, Netty's, and the limiter's own,
 * which declares the in-memory store's short per-key lock), and
 * records every blocking call it catches on a non-blocking thread (a Netty event loop, a Reactor
 * parallel thread) before it throws {@link BlockingOperationError} there. {@link NoBlockingCalls}
 * fails the test during which one was recorded: a blocking call that the application code
 * swallowed still fails the suite.
 */
public final class BlockingCalls implements LauncherSessionListener {

  private static final Queue<String> CAUGHT = new ConcurrentLinkedQueue<>();

  @Override
  public void launcherSessionOpened(LauncherSession session) {
    BlockHound.install(builder -> BenchBlockHound.allowAllocatorLocks(builder).blockingMethodCallback(method -> {
      BlockingOperationError error = new BlockingOperationError(method);
      StringWriter trace = new StringWriter();
      error.printStackTrace(new PrintWriter(trace));
      CAUGHT.add(method + " on thread " + Thread.currentThread().getName());
      System.err.println("BlockHound caught " + method + " on thread "
          + Thread.currentThread().getName() + ":\n" + trace); // code may swallow the error
      throw error;
    }));
  }

  /**
   * Returns the blocking calls caught since the last call, and forgets them.
   *
   * @return each call, with its thread
   */
  public static List<String> takeAll() {
    List<String> taken = new ArrayList<>();
    for (String call = CAUGHT.poll(); call != null; call = CAUGHT.poll()) {
      taken.add(call);
    }
    return taken;
  }
}
