/** Heap retained per tracked key, each subject measured in a JVM of its own. */
@NullMarked
package io.github.llmratelimiter.benchmarks.memory;

import org.jspecify.annotations.NullMarked;
