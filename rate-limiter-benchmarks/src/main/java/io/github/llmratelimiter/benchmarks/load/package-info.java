/**
 * A bounded closed-loop load generator with exact latency percentiles, for the runs outside JMH,
 * and the handling of the processes they start.
 */
@NullMarked
package io.github.llmratelimiter.benchmarks.load;

import org.jspecify.annotations.NullMarked;
