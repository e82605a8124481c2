/** The sample OpenAI-compatible gateway. */
@NullMarked
package io.github.llmratelimiter.sample;

import org.jspecify.annotations.NullMarked;
