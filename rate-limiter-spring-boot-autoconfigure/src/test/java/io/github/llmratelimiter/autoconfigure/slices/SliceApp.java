package io.github.llmratelimiter.autoconfigure.slices;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The application the slice tests of this package find, as a user's would be found: a slice keeps
 * of it only the controllers its annotation names and the auto-configurations it imports.
 */
@SpringBootApplication
public class SliceApp {}
