package io.github.llmratelimiter.benchmarks.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import io.github.llmratelimiter.benchmarks.http.HttpRun;
import io.github.llmratelimiter.benchmarks.redis.UpstreamPipelinedRun;

/** Renders the figures of one suite run as {@code docs/benchmarks.md}. */
public final class MarkdownReport {

  private static final List<String> SUBJECTS = List.of(
      "GatewayLimiter", "HierarchicalLimiter", "Quota", "SpringAiAdvisor", "Bucket4j", "Resilience4j", "Guava", "Naive", "Floor",
      "Upstream", "RedisStore", "Evalsha", "Bucket4jLettuce");
  private static final List<String> METHODS = List.of(
      "allowedOneKey", "allowedOneKeyDecisionEscapes", "allowedOwnKey", "allowedTenThousandKeys",
      "deniedRpmOneKey", "deniedBurstOneKey", "deniedOneKey", "deniedTenThousandKeys",
      "tryAcquireOneKey", "tryAcquireTenThousandKeys", "tryAcquireDeniedRpmOneKey",
      "tryAcquireDeniedBurstOneKey", "tryAcquireDeniedTenThousandKeys", "allowedThousandKeys",
      "allowedTwoLevelsOneKey", "tryAcquireTwoLevelsOneKey", "tryAcquireDeniedOneKey",
      "reserveAndSettleWithoutQuotas", "reserveAndSettleWithTwoQuotas", "decideAndSettle", "adviseCall",
      "windowBucketWithoutUpstream", "windowBucketWithUpstream", "windowBucketWithTurn",
      "windowBucketThroughEmptyRoom", "modelTokensWithoutUpstream", "modelTokensWithUpstream",
      "modelTokensWithTurn", "modelTokensThroughEmptyRoom");

  /**
   * Everything about a run besides its figures.
   *
   * @param machine the machine it ran on
   * @param versions library versions by name (the limiter, JMH and the peers)
   * @param settings the JMH settings, in words
   * @param loadSettings the settings of the load runs (pipelined Redis, HTTP), in words, or empty
   * @param command the exact command that produced the report
   * @param loadBefore the load averages when the run started
   * @param loadAfter the load averages when it ended
   * @param minutes how long the run took
   * @param notes what was tried while profiling (Markdown), or empty
   */
  public record Context(
      Machine machine,
      Map<String, String> versions,
      String settings,
      String loadSettings,
      String command,
      String loadBefore,
      String loadAfter,
      double minutes,
      String notes) {}

  private MarkdownReport() {}

  /**
   * Renders the report.
   *
   * @param figures the figures of one run
   * @param context the run's machine, versions, settings and command
   * @return the Markdown text
   */
  public static String render(List<Figure> figures, Context context) {
    return render(figures, List.of(), context);
  }

  /**
   * Renders the report.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run
   * @param context the run's machine, versions, settings and command
   * @return the Markdown text
   */
  public static String render(List<Figure> figures, List<LoadFigure> loads, Context context) {
    return render(figures, loads, List.of(), List.of(), context);
  }

  /**
   * Renders the report.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run
   * @param memory the heap retained per tracked key, per subject, of the same run
   * @param scaling the scaling rounds of the same run
   * @param context the run's machine, versions, settings and command
   * @return the Markdown text
   */
  public static String render(List<Figure> figures, List<LoadFigure> loads,
      List<MemoryFigure> memory, List<ScalingRound> scaling, Context context) {
    return render(figures, loads, memory, scaling, List.of(), List.of(), context);
  }

  /**
   * Renders the report.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run
   * @param memory the heap retained per tracked key, per subject, of the same run
   * @param scaling the scaling rounds of the same run
   * @param clusters the Redis Cluster scale-out cases of the same run
   * @param context the run's machine, versions, settings and command
   * @return the Markdown text
   */
  public static String render(List<Figure> figures, List<LoadFigure> loads,
      List<MemoryFigure> memory, List<ScalingRound> scaling, List<ClusterFigure> clusters,
      Context context) {
    return render(figures, loads, memory, scaling, clusters, List.of(), context);
  }

  /**
   * Renders the report.
   *
   * @param figures the JMH figures of one run
   * @param loads the load runs of the same run
   * @param memory the heap retained per tracked key, per subject, of the same run
   * @param scaling the scaling rounds of the same run
   * @param clusters the Redis Cluster scale-out cases of the same run
   * @param http the HTTP runs of the same run
   * @param context the run's machine, versions, settings and command
   * @return the Markdown text
   */
  public static String render(List<Figure> figures, List<LoadFigure> loads,
      List<MemoryFigure> memory, List<ScalingRound> scaling, List<ClusterFigure> clusters,
      List<HttpFigure> http,
      Context context) {
    StringBuilder md = new StringBuilder();
    md.append("# Benchmarks\n\n")
        .append("Generated by `bench/run` (module `rate-limiter-benchmarks`); do not edit by hand, ")
        .append("rerun the command below. Every figure below comes from one run, so the ratios ")
        .append("compare peers measured side by side on the same machine.\n\n");
    md.append("## Targets on the paths users run\n\n")
        .append("Load average (1, 5, 15 min) at start: ").append(context.loadBefore())
        .append("; at end: ").append(context.loadAfter())
        .append(" (2 cores: above 2, other work shared the machine while it ran).\n\n");
    outcomes(md, Targets.userPaths(figures, loads, memory, scaling, http));
    md.append("\n## Targets of the composed check\n\n");
    outcomes(md, Targets.evaluate(figures, loads, http));
    md.append("\n## Figures\n\n")
        .append("Throughput of all threads together (ops/s, ± the 99.9% confidence half-width), ")
        .append("bytes allocated per operation (`-prof gc`, `gc.alloc.rate.norm`), and the ratio ")
        .append("of the row's throughput to each peer's on the same case and thread count ")
        .append("(above 1: the row is faster). Peers on one key call one limiter object directly; ")
        .append("on 10,000 keys they look it up in a `ConcurrentHashMap`. The Floor rows are not a ")
        .append("limiter: they measure what any per-key locked limiter on the system clock pays ")
        .append("per call (a map lookup, a lock, one `System.nanoTime()`).\n\n")
        .append("| Subject | Mode | Case | Threads | ops/s | ± | B/op |");
    for (String peer : Figure.PEERS) {
      md.append(" ÷ ").append(peer).append(" |");
    }
    md.append("\n|---|---|---|---:|---:|---:|---:|");
    md.append("---:|".repeat(Figure.PEERS.size())).append('\n');
    for (Figure f : sorted(figures)) {
      if (f.isRedis()) {
        continue;
      }
      md.append("| ").append(f.subject()).append(" | ").append(f.mode().isEmpty() ? "–" : f.mode())
          .append(" | ").append(f.caseLabel()).append(" | ").append(f.threads())
          .append(" | ").append(ops(f.opsPerSecond())).append(" | ").append(ops(f.error()))
          .append(" | ").append(bytes(f.bytesPerOp())).append(" |");
      for (String peer : Figure.PEERS) {
        md.append(' ').append(ratio(f, peer, figures)).append(" |");
      }
      md.append('\n');
    }
    quotas(md, figures);
    springAi(md, figures);
    redis(md, figures, loads);
    renewals(md, loads);
    upstreams(md, figures, loads);
    ClusterSection.render(md, clusters, context.machine());
    http(md, http);
    memory(md, memory);
    scaling(md, scaling);
    Machine m = context.machine();
    md.append("\n## Machine, JVM and versions\n\n")
        .append("- Processors: ").append(m.cpus()).append('\n')
        .append("- CPU: ").append(m.cpuModel()).append('\n')
        .append("- Memory: ").append(m.memory()).append('\n')
        .append("- OS: ").append(m.os()).append('\n')
        .append("- JVM: ").append(m.jvm()).append('\n')
        .append("- Load average (1, 5, 15 min) at start: ").append(context.loadBefore())
        .append("; at end: ").append(context.loadAfter()).append('\n');
    context.versions().forEach((name, version) ->
        md.append("- ").append(name).append(": ").append(version).append('\n'));
    md.append("- JMH settings: ").append(context.settings()).append('\n');
    if (!context.loadSettings().isEmpty()) {
      md.append("- Load runs: ").append(context.loadSettings()).append('\n');
    }
    md
        .append(String.format(Locale.ROOT, "- Duration: %.1f min%n", context.minutes()))
        .append("\n## Command\n\n```\n").append(context.command()).append("\n```\n");
    if (!context.notes().isBlank()) {
      md.append("\n## Profiling notes\n\n").append(context.notes().strip()).append('\n');
    }
    return md.toString();
  }

  private static void outcomes(StringBuilder md, List<Targets.Outcome> outcomes) {
    md.append("| Target | Measured | Verdict |\n|---|---|---|\n");
    for (Targets.Outcome o : outcomes) {
      md.append("| ").append(o.target()).append(" | ").append(o.measured()).append(" | ")
          .append(o.verdict()).append(" |\n");
    }
  }

  private static void memory(StringBuilder md, List<MemoryFigure> memory) {
    if (memory.isEmpty()) {
      md.append("\nMemory per tracked key: not in this run.\n");
      return;
    }
    md.append("\n## Memory per tracked key\n\n")
        .append("Each subject in a JVM of its own (`TrackedKeyFootprint`, heap ")
        .append(String.join(" ", io.github.llmratelimiter.benchmarks.memory.FootprintRun.JVM_ARGS))
        .append("): used heap after a full GC before and after its keys (`tenant-N`) each made ")
        .append("one call, divided by the keys; the key strings are counted, as every subject ")
        .append("keeps them. The store's budget has a window of 10 an hour and a bucket; with ")
        .append("model tokens each key holds one reservation. Bucket4j's buckets have two ")
        .append("bandwidths (shared `Bandwidth` objects, a configuration per bucket as ")
        .append("`Bucket.builder()` makes it).\n\n")
        .append("| Subject | Keys | Bytes per key |\n|---|---:|---:|\n");
    for (MemoryFigure m : memory) {
      md.append(String.format(Locale.ROOT, "| %s | %,d | %.0f |%n", m.label(), m.keys(),
          m.bytesPerKey()));
    }
  }

  private static void scaling(StringBuilder md, List<ScalingRound> scaling) {
    if (scaling.isEmpty()) {
      md.append("\nScaling: not in this run.\n");
      return;
    }
    md.append("\n## Scaling\n\n")
        .append("`GatewayLimiterBenchmark.allowedOwnKey` (sequential), each thread on a key of its ")
        .append("own, at 1 and at 2 threads, each run in a JMH fork of its own (")
        .append(SuiteRunner.SCALING_WARMUP_ITERATIONS).append(" warm-up and ")
        .append(SuiteRunner.SCALING_ITERATIONS)
        .append(" measured iterations of 1 s unless overridden), the order alternating by round.\n\n")
        .append("| Round | First | 1 thread ops/s | 2 threads ops/s | 2 ÷ 1 |\n")
        .append("|---:|---|---:|---:|---:|\n");
    for (ScalingRound r : scaling) {
      md.append(String.format(Locale.ROOT, "| %d | %s | %s | %s | %.2f |%n", r.round(),
          r.twoFirst() ? "2 threads" : "1 thread", ops(r.oneThread()), ops(r.twoThreads()),
          r.ratio()));
    }
  }

  private static void redis(StringBuilder md, List<Figure> figures, List<LoadFigure> loads) {
    List<Figure> redis = figures.stream().filter(Figure::isRedis).toList();
    List<LoadFigure> pipelinedRuns = loads.stream().filter(l -> List.of(LoadFigure.REDIS_PIPELINED,
        LoadFigure.REDIS_PIPELINED_MODEL_TOKENS, LoadFigure.REDIS_PIPELINED_QUOTAS,
        LoadFigure.REDIS_PIPELINED_FLOOR, LoadFigure.REDIS_PIPELINED_ARGUMENTS,
        LoadFigure.REDIS_PIPELINED_COMMANDS, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_ARGUMENTS,
        LoadFigure.REDIS_PIPELINED_LIBRARY, LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_COMMANDS,
        LoadFigure.REDIS_PIPELINED_MODEL_TOKENS_LIBRARY)
        .contains(l.subject())).toList();
    Optional<LoadFigure> pipelined = pipelinedRuns.stream().findFirst();
    if (redis.isEmpty() && pipelined.isEmpty()) {
      md.append("\nRedis: not in this run.\n");
      return;
    }
    md.append("\n## Redis\n\n")
        .append("Each benchmark starts its own `redis-server` (the binary of embedded-redis) on ")
        .append("loopback; every thread shares one Lettuce connection. `Evalsha` is the floor of ")
        .append("any one-script decision: a synchronous `EVALSHA` of `return 1`. `RedisStore` is a ")
        .append("sequential `GatewayLimiter` (window + bucket) on `RedisRateLimitStore`; ")
        .append("`Bucket4jLettuce` is a two-bandwidth Bucket4j bucket behind its Lettuce ")
        .append("(compare-and-swap) proxy manager. All calls are allowed. B/op is the client ")
        .append("JVM's allocation per call.\n\n");
    if (!redis.isEmpty()) {
      md.append("| Subject | Case | Threads | ops/s | ± | B/op | ÷ raw EVALSHA | ÷ Bucket4j-Lettuce |\n")
          .append("|---|---|---:|---:|---:|---:|---:|---:|\n");
      for (Figure f : sorted(redis)) {
        md.append("| ").append(f.subject()).append(" | ").append(f.caseLabel()).append(" | ")
            .append(f.threads()).append(" | ").append(ops(f.opsPerSecond())).append(" | ")
            .append(ops(f.error())).append(" | ").append(bytes(f.bytesPerOp())).append(" | ")
            .append(redisRatio(f, figures, "Evalsha", "evalshaReturnOne")).append(" | ")
            .append(redisRatio(f, figures, "Bucket4jLettuce", "allowedOneKey")).append(" |\n");
      }
    }
    pipelined.ifPresent(p -> md.append("\nPipelined: ").append(p.concurrency())
        .append(" threads call the store over 1,000 keys for ")
        .append(String.format(Locale.ROOT, "%.0f s", p.seconds()))
        .append(" (after a warm-up), so that Lettuce pipelines their scripts on the one ")
        .append("connection, each case on a fresh `redis-server`: a window and a bucket ")
        .append("(`allow`), the same with model tokens (`reserve` of 100 model tokens, the ")
        .append("decision of a call that reports usage; its reconciliation after the call is a ")
        .append("second script, not counted here), the same with two quotas (a daily cost quota ")
        .append("and a monthly model-token quota: what quotas add to the script), and the floor: ")
        .append("raw `EVALSHA` of `return 1` ")
        .append("from as many threads on one connection; then the floors of the first two ")
        .append("decisions, pipelined alike: a script that takes the decision's keys and ")
        .append("arguments (their number and sizes) and returns a reply of its size, running no ")
        .append("command, and the same script running exactly the commands the decision runs ")
        .append("(`TIME`, the level's `GETRANGE` of its first 4 KB and `SET … PX`; with ")
        .append("model tokens also the reservation counter's `INCR` and the model-token window's ")
        .append("`GETRANGE` and `SET … PX`) ")
        .append("and nothing else, each command's calls per decision and Redis time per call ")
        .append("(`INFO commandstats`) in its case, and the same after the store's `lib.lua`, ")
        .append("which every script of the store runs on every call before its own part (a ")
        .append("script's body runs whole on each `EVALSHA`: its constants and function ")
        .append("definitions, no command; with model tokens also its model-token functions, ")
        .append("which a decision creates on every call of a level that limits them). What a ")
        .append("decision costs above its commands ")
        .append("alone is its script's own work. Redis CPU is `used_cpu_sys + ")
        .append("used_cpu_user` of `INFO cpu` over the measured period, divided by its wall ")
        .append("time.\n\n")
        .append("| Case | Decisions/s | p50 | p99 | Redis CPU (% of one core) | Redis CPU per decision | Round trips per decision |\n")
        .append("|---|---:|---:|---:|---:|---:|---:|\n"));
    for (LoadFigure p : pipelinedRuns) {
      md.append(String.format(Locale.ROOT, "| %s | %,.0f | %.3f ms | %.3f ms | %.0f %% | %.1f µs | %.3f |%n",
          p.scenario(), p.callsPerSecond(), p.p50Ms(), p.p99Ms(), p.serverCpuPercent(),
          p.serverCpuMicrosPerCall(), p.roundTripsPerDecision()));
    }
  }

  /** What renewing the slots of calls in flight costs Redis, per count of calls in flight. */
  private static void renewals(StringBuilder md, List<LoadFigure> loads) {
    List<LoadFigure> runs = loads.stream()
        .filter(l -> l.subject().equals(LoadFigure.REDIS_SLOT_RENEWALS)).toList();
    if (runs.isEmpty()) {
      return;
    }
    md.append("\n### Slot renewals on Redis\n\n")
        .append("One instance holds the calls in flight (a key and a slot each) on its own ")
        .append("`redis-server`, and its timer renews them every third of the slot lease for ")
        .append(String.format(Locale.ROOT, "%.0f s", runs.get(0).seconds()))
        .append("; nothing else runs. Redis time is `usec` of `EVALSHA` in `INFO commandstats`: ")
        .append("the scripts' runs, without reading the commands and writing the replies. A ")
        .append("renewal's work depends on the slots it renews, ")
        .append("not on the lease: at the default lease of 5 s an instance sends 0.6 renewals a ")
        .append("second (on a Redis Cluster, as many per hash slot holding its calls), so its ")
        .append("Redis time per second is 0.6 times the time per renewal.\n\n")
        .append("| Case | Renewals/s | Redis time per renewal | Redis time per second at the default lease |\n")
        .append("|---|---:|---:|---:|\n");
    for (LoadFigure r : runs) {
      double perRenewal = r.serverCpuMicrosPerCall();
      md.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f µs | %.1f µs |%n", r.scenario(),
          r.callsPerSecond(), perRenewal, perRenewal * 3 / 5));
    }
  }

  /**
   * What an upstream, its shared order and the waiting room while no call waits add to a
   * decision: in memory per policy and thread count, and on Redis pipelined (standalone and
   * Cluster), each against the same decision without an upstream measured in the same run.
   */
  private static void upstreams(StringBuilder md, List<Figure> figures, List<LoadFigure> loads) {
    StringBuilder inProcess = new StringBuilder();
    for (int threads : new int[] {1, 2}) {
      for (String policy : List.of("windowBucket", "modelTokens")) {
        Optional<Figure> without = Targets.find(figures, "Upstream", "",
            policy + "WithoutUpstream", threads);
        Optional<Figure> with = Targets.find(figures, "Upstream", "", policy + "WithUpstream",
            threads);
        Optional<Figure> turn = Targets.find(figures, "Upstream", "", policy + "WithTurn",
            threads);
        Optional<Figure> room = Targets.find(figures, "Upstream", "",
            policy + "ThroughEmptyRoom", threads);
        if (without.isEmpty() || with.isEmpty() || turn.isEmpty() || room.isEmpty()) {
          continue;
        }
        double a = nanos(without.get());
        double b = nanos(with.get());
        double t = nanos(turn.get());
        double c = nanos(room.get());
        inProcess.append(String.format(Locale.ROOT,
            "| %s | %d | %s | %s | %.2f | %+.0f ns | %s | %.2f | %+.0f ns | %s | %.2f | %+.0f ns |%n",
            policy.equals("windowBucket") ? "window + bucket (decision)"
                : "window + bucket + model tokens (decision and settlement)", threads,
            nanosCell(without.get()), nanosCell(with.get()), b / a, b - a, nanosCell(turn.get()),
            t / a, t - b, nanosCell(room.get()), c / b, c - b));
      }
    }
    List<LoadFigure[]> pairs = new ArrayList<>();
    List<String> labels = new ArrayList<>();
    String clusterLabel = "Cluster of " + UpstreamPipelinedRun.CLUSTER_MASTERS
        + " masters: window + bucket";
    String turnLabel = ", with the turn (empty order)";
    for (String[] pair : new String[][] {
        {"standalone: window + bucket", LoadFigure.REDIS_UPSTREAM_NONE, LoadFigure.REDIS_UPSTREAM},
        {"standalone: window + bucket" + turnLabel, LoadFigure.REDIS_UPSTREAM_NONE,
            LoadFigure.REDIS_UPSTREAM_TURN},
        {"standalone: window + bucket + model tokens (reserve)",
            LoadFigure.REDIS_UPSTREAM_NONE_MODEL_TOKENS, LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS},
        {"standalone: window + bucket + model tokens (reserve)" + turnLabel,
            LoadFigure.REDIS_UPSTREAM_NONE_MODEL_TOKENS,
            LoadFigure.REDIS_UPSTREAM_MODEL_TOKENS_TURN},
        {clusterLabel, LoadFigure.REDIS_CLUSTER_UPSTREAM_NONE, LoadFigure.REDIS_CLUSTER_UPSTREAM},
        {clusterLabel + turnLabel, LoadFigure.REDIS_CLUSTER_UPSTREAM_NONE,
            LoadFigure.REDIS_CLUSTER_UPSTREAM_TURN}}) {
      Optional<LoadFigure> without = load(loads, pair[1]);
      Optional<LoadFigure> with = load(loads, pair[2]);
      if (without.isPresent() && with.isPresent()) {
        labels.add(pair[0]);
        pairs.add(new LoadFigure[] {without.get(), with.get()});
      }
    }
    if (inProcess.length() == 0 && pairs.isEmpty()) {
      md.append("\nUpstreams: not in this run.\n");
      return;
    }
    md.append("\n## Upstreams\n\n")
        .append("What an upstream (a provider account every call to it shares: its requests and ")
        .append("model tokens per window, one state for all keys) adds to a decision, against the ")
        .append("same decision without it measured in the same run; its limits admit every call ")
        .append("of a run (a deny fails the run), its window is as short as the callers' so that ")
        .append("its one hot log stays small. A call \"with the turn\" also carries its place ")
        .append("in the upstream's shared fair order (`reserve` with an `UpstreamTurn`, as the ")
        .append("gateway sends every upstream call when the store keeps an order): while no call ")
        .append("waits (the empty order measured here) the store checks that none waits and ")
        .append("moves the class's last-left mark by the call's estimate (no tenant's counter is ")
        .append("written while none waits), in the same atomic step.\n");
    if (inProcess.length() > 0) {
      md.append("\nIn memory, `UpstreamBenchmark`, over 10,000 keys, sequential composition: the ")
          .append("same `reserve` without the upstream, with it on the call, with it and the ")
          .append("call's turn (with model tokens the order's counter is also corrected with the ")
          .append("usage, `UpstreamOrder.settled`, and signalled, as after a call), and with it ")
          .append("through `UpstreamWaitingRoom.await` while no call waits for the upstream (the ")
          .append("call is tried at once; with model tokens the room's counter is also corrected ")
          .append("with the usage and told that capacity may have freed, as after a call). Time ")
          .append("per call on its thread (threads × 10⁹ ÷ the throughput of all threads, ± from ")
          .append("the 99.9% confidence half-width) and bytes allocated per call (`-prof gc`); ")
          .append("a ratio is the row's time ÷ the baseline's ")
          .append("(above 1: slower); at 2 threads both threads share the upstream's one state.\n\n")
          .append("| Policy | Threads | without upstream | with upstream | with ÷ without | ")
          .append("added | with the turn (empty order) | turn ÷ without | added to with | ")
          .append("through the empty room | room ÷ with | added |\n")
          .append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
          .append(inProcess);
    }
    if (!pairs.isEmpty()) {
      md.append("\nOn Redis, `UpstreamPipelinedRun`: the pipelined run above (")
          .append(pairs.get(0)[0].concurrency()).append(" threads on one connection over 1,000 ")
          .append("keys, each case on a fresh `redis-server` or a fresh Cluster of ")
          .append(UpstreamPipelinedRun.CLUSTER_MASTERS).append(" masters, ")
          .append(String.format(Locale.ROOT, "%.0f s", pairs.get(0)[0].seconds()))
          .append(" measured after a warm-up), the same `reserve` without the upstream, then ")
          .append("with it, then with it and the call's turn (the store's order opened first, ")
          .append("subscribed to its wake-ups as a gateway's; after the run no call waits, no ")
          .append("tenant has a counter of its own and the service counted is the decisions ")
          .append("times the estimate, or the run fails); each row compares one of these with ")
          .append("the case without the upstream. Redis CPU per decision is the server's CPU (`INFO cpu`) over the ")
          .append("measured period per decision: it includes reading the commands and writing ")
          .append("the replies, so it also depends on how many commands each read brings; the ")
          .append("time in the script is `usec` ÷ `calls` of `EVALSHA` and `EVAL` in `INFO ")
          .append("commandstats` over the same period, the script's own work, whose difference ")
          .append("is what the upstream adds (\"added\"); on a Cluster, CPU and time are all ")
          .append("masters' together. Round trips per decision are counted as in every pipelined ")
          .append("run: the script calls the store's client completed and the `EVALSHA`/`EVAL` ")
          .append("calls in `INFO commandstats` (of every master), which must be equal, divided by ")
          .append("the decisions; on a standalone server any count but one per decision fails ")
          .append("the run.\n\n")
          .append("| Policy | Decisions/s without | with | with ÷ without | p50 without / with | ")
          .append("p99 without / with | Redis CPU per decision without / with | Redis time in ")
          .append("the script per decision without / with | added | Round trips per decision ")
          .append("without / with |\n")
          .append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
      for (int i = 0; i < pairs.size(); i++) {
        LoadFigure a = pairs.get(i)[0];
        LoadFigure b = pairs.get(i)[1];
        md.append(String.format(Locale.ROOT, "| %s | %,.0f | %,.0f | %.2f | %.3f / %.3f ms | "
                + "%.3f / %.3f ms | %.1f / %.1f µs | %.1f / %.1f µs | %+.1f µs | %.3f / %.3f |%n",
            labels.get(i), a.callsPerSecond(),
            b.callsPerSecond(), b.callsPerSecond() / a.callsPerSecond(), a.p50Ms(), b.p50Ms(),
            a.p99Ms(), b.p99Ms(), a.serverCpuMicrosPerCall(), b.serverCpuMicrosPerCall(),
            a.scriptMicrosPerCall(), b.scriptMicrosPerCall(),
            b.scriptMicrosPerCall() - a.scriptMicrosPerCall(), a.roundTripsPerDecision(),
            b.roundTripsPerDecision()));
      }
    }
    md.append("\nOn a Redis Cluster a decision with an upstream is one script when the upstream's ")
        .append("hash slot is the root key's; otherwise (the usual case) two round trips, ")
        .append("`upstream-acquire.lua` on the upstream's slot then `acquire.lua` on the root's, ")
        .append("and three when the caller's levels deny a call the upstream admitted (`refund.lua` ")
        .append("gives the upstream's charge back): see [Redis, Upstreams](redis.md#upstreams). ")
        .append(labels.contains(clusterLabel)
            ? "Measured above on keys whose slots are spread over the Cluster, so that few or "
                + "none share the upstream's.\n"
            : "The Cluster's count is not measured in this run.\n");
  }

  private static Optional<LoadFigure> load(List<LoadFigure> loads, String subject) {
    return loads.stream().filter(l -> l.subject().equals(subject)).findFirst();
  }

  /** The time of one call on its thread, in nanoseconds. */
  private static double nanos(Figure f) {
    return f.threads() * 1e9 / f.opsPerSecond();
  }

  /** {@code 182 ± 3 ns, 48 B}: the time of one call on its thread, its error, its allocation. */
  private static String nanosCell(Figure f) {
    double ns = nanos(f);
    return String.format(Locale.ROOT, "%.0f ± %.0f ns, %s B", ns, ns * f.error() / f.opsPerSecond(),
        bytes(f.bytesPerOp()));
  }

  /** What two quotas add to a reserved and settled call in memory, per composition mode. */
  private static void quotas(StringBuilder md, List<Figure> figures) {
    StringBuilder rows = new StringBuilder();
    for (String mode : List.of("SEQUENTIAL", "RESERVE_COMMIT")) {
      Optional<Figure> without = Targets.find(figures, "Quota", mode,
          "reserveAndSettleWithoutQuotas", 1);
      Optional<Figure> with = Targets.find(figures, "Quota", mode,
          "reserveAndSettleWithTwoQuotas", 1);
      if (without.isPresent() && with.isPresent()) {
        double a = without.get().opsPerSecond();
        double b = with.get().opsPerSecond();
        rows.append(String.format(Locale.ROOT, "| %s | %s | %s | %.2f | %.0f ns |%n", mode,
            ops(a), ops(b), b / a, 1e9 / b - 1e9 / a));
      }
    }
    if (rows.length() == 0) {
      return;
    }
    md.append("\n## Quotas\n\n")
        .append("`QuotaBenchmark`, 1 thread over 10,000 keys: a call reserved and settled on the ")
        .append("in-memory store, on a budget with a window, a bucket and model tokens, without ")
        .append("quotas and with two (a daily cost quota in Europe/Berlin and a monthly ")
        .append("model-token quota, with thresholds).\n\n")
        .append("| Mode | without quotas (ops/s) | with two (ops/s) | ratio | added per call |\n")
        .append("|---|---:|---:|---:|---:|\n")
        .append(rows);
  }

  /** What the Spring AI advisor adds to the decision and settlement it makes, in memory. */
  private static void springAi(StringBuilder md, List<Figure> figures) {
    Optional<Figure> decision = figures.stream().filter(f -> f.subject().equals("SpringAiAdvisor")
        && f.method().equals("decideAndSettle") && f.threads() == 1).findFirst();
    Optional<Figure> advised = figures.stream().filter(f -> f.subject().equals("SpringAiAdvisor")
        && f.method().equals("adviseCall") && f.threads() == 1).findFirst();
    if (decision.isEmpty() || advised.isEmpty()) {
      return;
    }
    double a = decision.get().opsPerSecond();
    double b = advised.get().opsPerSecond();
    md.append("\n## Spring AI advisor\n\n")
        .append("`SpringAiAdvisorBenchmark`, 1 thread over 10,000 tenants on the in-memory store: a ")
        .append("call decided and settled through the enforcer from an already parsed request body, ")
        .append("and the same call through `RateLimitAdvisor.adviseCall` with a chain that answers at ")
        .append("once (the model's time is in neither).\n\n")
        .append("| decision and settlement (ops/s) | through the advisor (ops/s) | ratio | added per call |\n")
        .append("|---:|---:|---:|---:|\n")
        .append(String.format(Locale.ROOT, "| %s ± %s | %s ± %s | %.2f | %.0f ns |%n", ops(a),
            ops(decision.get().error()), ops(b), ops(advised.get().error()), b / a, 1e9 / b - 1e9 / a));
  }

  private static String redisRatio(Figure f, List<Figure> figures, String base, String method) {
    if (f.subject().equals(base)) {
      return "–";
    }
    return Targets.find(figures, base, "", method, f.threads())
        .map(b -> String.format(Locale.ROOT, "%.2f", f.opsPerSecond() / b.opsPerSecond()))
        .orElse("–");
  }

  private static void http(StringBuilder md, List<HttpFigure> http) {
    if (http.isEmpty()) {
      md.append("\nHTTP: not in this run.\n");
      return;
    }
    md.append("\n## HTTP\n\n")
        .append("Two stacks, each with the same policies: servlet, the sample gateway ")
        .append("(`sample-app`'s executable jar, Spring MVC on Tomcat, its stand-in model streaming ")
        .append("without pacing, its `application.yml` left out so that its plan quotas and call ")
        .append("concurrency limit do not apply); reactive, `integration-tests/webflux`' ")
        .append("`bench.BenchGateway` (WebFlux on Netty, an echo of the same shape). With the ")
        .append("limiter on: the sample's hierarchy (a per-key level above a per key-and-model level ")
        .append("with a bucket, reserve-then-commit), limits high enough that nothing is denied. ")
        .append("Calls: plain (`POST /v1/chat/completions`, a JSON answer with its usage), streamed ")
        .append("(`\"stream\": true` with `include_usage`: server-sent events, the usage in the last ")
        .append("before `[DONE]`), and model tokens (a plain call on a policy that also limits model ")
        .append("tokens: an estimate reserved, then reconciled from the answer's usage). Stores: ")
        .append("in-memory, and Redis on a `redis-server` the run starts. Per stack and policy ")
        .append("three gateways run at once, each in a JVM of its own on loopback: the limiter off ")
        .append("(`ratelimiter.enabled=false`), on in memory and on Redis. Each is warmed up on ")
        .append("each call right before that call is measured, until its JIT compiler is quiet ")
        .append("(its threads under ").append(Math.round(HttpRun.QUIET_COMPILER_SHARE * 100))
        .append(" % of the gateway's CPU over ").append(HttpRun.WARMUP_STEP.toSeconds())
        .append(" s, as the command's settings below say), then ")
        .append("each stack, store and call is measured in rounds of one slice off and one on, the ")
        .append("order alternating (off, on; on, off; ...), under the same closed-loop load: ")
        .append(HttpRun.CONCURRENCY).append(" clients (JDK `HttpClient`, HTTP/1.1, one platform ")
        .append("thread and one API key each) in the runner's JVM on the same machine. CPU per ")
        .append("request is the gateway process's CPU time (user + system, the OS's accounting, ")
        .append("`/proc/<pid>/stat`) over the slice divided by the requests started in it; a ")
        .append("ratio is the median of the rounds' on ÷ off ratios, with their range. The JIT ")
        .append("compiler threads' part of it (`/proc/<pid>/task/*/stat`, threads `C1/C2 ")
        .append("CompilerThread`) is work a gateway does until its code is compiled, not per ")
        .append("request, and a gateway with more code to compile does it for longer: the last ")
        .append("column gives the ratio without it and its share of all the gateways' CPU. Every ")
        .append("answer is checked: a 200 with its usage, the `RateLimit` header exactly when the ")
        .append("limiter is on, a stream ending in `[DONE]` after its usage; the on gateway's ")
        .append("`ratelimiter.model.tokens` counter grows exactly in the model-token case. ")
        .append("Latencies are exact percentiles of every measured request of a side.\n\n")
        .append("| Stack | Store | Call | Requests/s off | on | on ÷ off | p50 off / on | ")
        .append("p99 off / on | CPU per request off | on | on ÷ off | on ÷ off without the JIT ")
        .append("compiler (its share) |\n")
        .append("|---|---|---|---:|---:|---|---:|---:|---:|---:|---|---|\n");
    long retried = 0;
    long hung = 0;
    for (HttpFigure f : http) {
      int n = f.rounds().size();
      md.append(String.format(Locale.ROOT,
          "| %s | %s | %s | %,.0f | %,.0f | %s | %.2f / %.2f ms | %.2f / %.2f ms | %.0f µs | "
              + "%.0f µs | %s | %s (%.0f %%) |%n", f.stack(), f.store(), f.call(),
          f.offRequestsPerSecond(), f.onRequestsPerSecond(),
          Targets.spread(f.throughputRatio(), n), f.offP50Ms(), f.onP50Ms(), f.offP99Ms(),
          f.onP99Ms(), f.offCpuMicros(), f.onCpuMicros(),
          Targets.spread(f.cpuRatio(), n) + (f.cpuResolved() ? "" : "; " + Targets.UNRESOLVED),
          Targets.spread(f.cpuWithoutCompilerRatio(), n), f.compilerShare() * 100));
      retried += f.retried();
      hung += f.hung();
    }
    if (retried > 0) {
      md.append(String.format(Locale.ROOT, "%n%,d requests were sent again on a fresh connection "
          + "after theirs closed under them.%n", retried));
    }
    if (hung > 0) {
      md.append(String.format(Locale.ROOT, "%n%,d requests were sent again after the JDK client "
          + "hung on them (no complete answer within their timeout and %d s) while their gateway "
          + "served no request as old; the run's output names the files of the threads.%n", hung,
          HttpRun.GRACE.toSeconds()));
    }
    md.append("\nThe store, with the limiter on: the mean time of a decision as the gateway ")
        .append("times it (its `ratelimiter.decision.latency` timer over the measured slices: on ")
        .append("Redis, the round trip and the script), and on Redis the scripts per request ")
        .append("(`EVALSHA` and `EVAL` calls in `INFO commandstats`, each one round trip: those ")
        .append("that decide, settle and renew) and Redis's own time in them per request (their ")
        .append("`usec`, the commands they call included).\n\n")
        .append("| Stack | Store | Call | Decision (gateway's timer, mean) | Redis scripts per ")
        .append("request | Redis time in them per request |\n|---|---|---|---:|---:|---:|\n");
    for (HttpFigure f : http) {
      boolean redis = !Double.isNaN(f.redisScriptsPerRequest());
      md.append(String.format(Locale.ROOT, "| %s | %s | %s | %.1f µs | %s | %s |%n", f.stack(),
          f.store(), f.call(), f.decisionMicros(),
          redis ? String.format(Locale.ROOT, "%.2f", f.redisScriptsPerRequest()) : "–",
          redis ? String.format(Locale.ROOT, "%.1f µs", f.redisMicrosPerRequest()) : "–"));
    }
  }

  private static List<Figure> sorted(List<Figure> figures) {
    List<Figure> sorted = new ArrayList<>(figures);
    sorted.sort(Comparator.comparingInt(Figure::threads)
        .thenComparingInt(f -> index(SUBJECTS, f.subject()))
        .thenComparing(Figure::mode, Comparator.reverseOrder()) // SEQUENTIAL before RESERVE_COMMIT
        .thenComparingInt(f -> index(METHODS, f.method())));
    return sorted;
  }

  private static int index(List<String> order, String value) {
    int i = order.indexOf(value);
    return i < 0 ? order.size() : i;
  }

  private static String ratio(Figure f, String peer, List<Figure> figures) {
    if (f.subject().equals(peer)) {
      return "–";
    }
    Optional<Figure> p = Targets.find(figures, peer, "", f.comparableCase(), f.threads());
    return p.map(base -> String.format(Locale.ROOT, "%.2f", f.opsPerSecond() / base.opsPerSecond()))
        .orElse("–");
  }

  /** Formats a throughput in millions, {@code 21.53 M}, or below a million in thousands, {@code 13.7 k}. */
  static String ops(double opsPerSecond) {
    if (Double.isNaN(opsPerSecond)) {
      return "–";
    }
    if (Math.abs(opsPerSecond) < 1e6) {
      return String.format(Locale.ROOT, "%.1f k", opsPerSecond / 1e3);
    }
    return String.format(Locale.ROOT, "%.2f M", opsPerSecond / 1e6);
  }

  /** Formats bytes per operation, {@code 0.0}, or {@code –} when not measured. */
  static String bytes(double bytesPerOp) {
    return Double.isNaN(bytesPerOp) ? "–" : String.format(Locale.ROOT, "%.1f", bytesPerOp);
  }
}
