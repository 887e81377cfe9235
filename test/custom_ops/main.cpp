// vkd_custom_ops: the custom-op test (ACCU) and benchmark (PERF) binary.
//   ACCU: every case runs on the GPU and on its CPU reference; one line per case with the max
//         abs error, mismatch count and PASS/FAIL; exits 1 on any FAIL (or validation error).
//   PERF: warm-up, then timed iterations back to back in one submission with GPU timestamps
//         (ComputeGraph::benchmark); a table of median/min µs of the case's dispatches end to
//         end (with the barriers their hazards need: independent weight copies overlap), the
//         median kernel µs (each dispatch timed alone, the spans summed: what a per-kernel
//         profiler reports, launch cost included), and GB/s or GOP/s from the median end-to-end
//         time, each as a share of the peaks measured in the same run (or of the ceiling case
//         it names, ceiling/..., measured first even when the filter leaves it out: a streamed
//         GEMV against a copy of the same bytes in as many dispatches).
//   --kernel-stats (PERF): pipelines are built with statistics capture and, under each case,
//         one line per dispatch node shows what the driver made of its kernel (registers,
//         shared memory, ... under the driver's own names; VK_KHR_pipeline_executable_properties),
//         also in the --json output. A device without the extension says so once and runs as usual.
//   Under each PERF case (PerfChecks.h): where its tensors landed (memory types, heaps, offset
//         alignment) and, on GPUs, a clock probe's rate before and after its timed submission
//         against the probe's best in the run, with a WARNING when either is off; the cases
//         with the reference backend's shapes (etvk/) print its latency and ours / its.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/Error.h"
#include "runtime/vk/Context.h"
#include "test/custom_ops/Harness.h"
#include "test/custom_ops/PerfChecks.h"

namespace vkd::custom_ops {

// One register_<family>_cases per test/custom_ops/<family>_cases.cpp, listed by the build from
// the folder (cmake/VkdFamilyLists.cmake), in file-name order: the order the cases run in.
#define VKD_FAMILY(family) void register_##family##_cases(Registry& registry);
#include "test/custom_ops/CaseFamilies.inc"
#undef VKD_FAMILY

namespace {

struct Options {
  bool accu = true, perf = false, list = false;
  bool kernel_stats = false;
  std::string filter = ".*";
  std::string device;
  std::string json_file;
  int warmup = 5, iterations = 30;
  int warmup_ms = 200;  // GPU time each case warms up for at least (GPU devices)
  // GPU: before each case, the clock probe until it runs at 90% of its best, up to N ms. An
  // H100 drops its SM clock to 345-555 MHz after ~1.5 s idle (the host preparing a large case)
  // and raises it only after 0.2-0.6 s of load, longer than a case's warm-up: cases then
  // measured 2-7x slow (issue 20 item 6; docs/BENCHMARKS.md).
  int settle_ms = 2000;
  int seed = 1234;
  bool repeat = false;  // ACCU: every graph executed twice, its outputs byte for byte equal
};

constexpr const char* kUsage =
    "usage: vkd_custom_ops [--mode accu|perf|all] [--filter REGEX] [--device SEL]\n"
    "                      [--json FILE] [--iterations N] [--warmup N] [--warmup-ms N]\n"
    "                      [--seed N] [--list] [--settle-ms N]\n"
    "                      [--kernel-stats] [--repeat]\n"
    "  --mode      accu (default): correctness vs CPU reference; perf: GPU timings; all: both\n"
    "  --filter    run only cases whose name matches REGEX (std::regex, search); selecting no\n"
    "              case of the mode is an error (exit 2)\n"
    "  --device    device index or name substring (default: VKD_DEVICE or the best device)\n"
    "  --warmup-ms on a GPU, warm each PERF case up for at least N ms of GPU time (default 200)\n"
    "  --json      also write PERF results to FILE\n"
    "  --settle-ms on a GPU, before each PERF case run the clock probe until it reaches 90% of\n"
    "              its best in the run, for up to N ms (default 2000; 0: off)\n"
    "  --kernel-stats  PERF: print what the driver compiled each node's kernel into (registers,\n"
    "              shared memory, ...; VK_KHR_pipeline_executable_properties), also in --json\n"
    "  --repeat    ACCU: execute each case's graph a second time and require the same output\n"
    "              bytes (a driver that races or reads memory nothing wrote differs)\n"
    "  Under VKD_DEVICE_CLASS a case the class cannot run is REFUSED (an Unsupported error\n"
    "  naming the limit), not failed; the kernels each case ran are listed at the end.\n";

bool parse_int(const char* s, int& out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!end || *end || v < 0 || v > 1000000) return false;
  out = static_cast<int>(v);
  return true;
}

bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "vkd_custom_ops: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--mode") {
      const char* v = value("--mode");
      if (!v) return false;
      const std::string m = v;
      if (m == "accu") {
        o.accu = true;
        o.perf = false;
      } else if (m == "perf") {
        o.accu = false;
        o.perf = true;
      } else if (m == "all") {
        o.accu = o.perf = true;
      } else {
        std::fprintf(stderr, "vkd_custom_ops: unknown mode '%s'\n", v);
        return false;
      }
    } else if (a == "--filter") {
      const char* v = value("--filter");
      if (!v) return false;
      o.filter = v;
    } else if (a == "--device") {
      const char* v = value("--device");
      if (!v) return false;
      o.device = v;
    } else if (a == "--json") {
      const char* v = value("--json");
      if (!v) return false;
      o.json_file = v;
    } else if (a == "--iterations" || a == "--warmup" || a == "--warmup-ms" || a == "--seed" ||
               a == "--settle-ms") {
      const char* v = value(a.c_str());
      int n = 0;
      if (!v || !parse_int(v, n)) {
        std::fprintf(stderr, "vkd_custom_ops: %s needs a non-negative integer\n", a.c_str());
        return false;
      }
      (a == "--iterations"  ? o.iterations
       : a == "--warmup"    ? o.warmup
       : a == "--warmup-ms" ? o.warmup_ms
       : a == "--settle-ms" ? o.settle_ms
                            : o.seed) = n;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--kernel-stats") {
      o.kernel_stats = true;
    } else if (a == "--repeat") {
      o.repeat = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "vkd_custom_ops: unknown option '%s'\n%s", a.c_str(), kUsage);
      return false;
    }
  }
  if (o.iterations < 1) o.iterations = 1;
  return true;
}

// ---------------------------------------------------------------------------------------
// ACCU

// Every output's bytes as the last execute left them.
std::vector<std::vector<int32_t>> output_words(const graph::ComputeGraph& g) {
  std::vector<std::vector<int32_t>> words;
  for (graph::ValueRef ref : g.output_refs()) words.push_back(g.read_words(ref));
  return words;
}

// One case: its result against the reference; with `repeat`, the graph executed again on the
// same inputs must give the same bytes (mismatches counts the words that differ). `kernels`
// gets the kernels its nodes ran.
AccuResult run_accu_case(vk::Context& ctx, const Case& c, int seed, bool repeat,
                         std::set<std::string>& kernels) {
  auto instance = c.make();
  graph::ComputeGraph g(ctx);
  instance->build(g);
  g.prepare();
  for (const auto& node : g.nodes()) kernels.insert(shaders::shader_info(node.kernel).name);
  std::mt19937 rng(static_cast<uint32_t>(seed));
  instance->write_inputs(g, rng);
  g.execute();
  AccuResult result = instance->check(g);
  if (repeat) {
    const auto first = output_words(g);
    g.execute();
    const auto second = output_words(g);
    for (size_t o = 0; o < first.size(); ++o) {
      for (size_t i = 0; i < first[o].size(); ++i)
        result.repeat_mismatches += first[o][i] != second[o][i];
    }
  }
  return result;
}

// A further ACCU pass over the cases with int8-dot and fallback paths: a context with some
// features switched off, and the label its results print with.
struct AccuPass {
  std::unique_ptr<vk::Context> ctx;
  const char* label;
};

// The label of the main pass: which of a kernel's paths the device takes.
const char* main_pass_label(const vk::DeviceProfile& p) {
  return p.cpu_kernels ? "cpu" : p.int8_dot_product ? "int8dot" : "no-dot";
}

int run_accu(vk::Context& ctx, const std::vector<AccuPass>& passes,
             const std::vector<const Case*>& cases, int seed, bool repeat) {
  int passed = 0, failed = 0, not_run = 0, refused = 0;
  std::map<std::string, std::set<std::string>> kernels_of_op;   // case op -> kernels it ran
  std::map<std::string, std::set<std::string>> refusals_of_op;  // case op -> why refused
  auto run_one = [&](vk::Context& context, const Case& c, const char* variant) {
    try {
      const AccuResult r = run_accu_case(context, c, seed, repeat, kernels_of_op[c.op]);
      const bool ok = r.mismatches == 0 && r.checked > 0 && r.repeat_mismatches == 0;
      (ok ? passed : failed)++;
      std::printf("%s  %-60s %-9s max_abs_err=%-10.3g mismatches=%lld/%lld", ok ? "PASS" : "FAIL",
                  c.name.c_str(), variant, r.max_abs_error, static_cast<long long>(r.mismatches),
                  static_cast<long long>(r.checked));
      if (r.repeat_mismatches) {
        std::printf(" repeat: %lld words differ", static_cast<long long>(r.repeat_mismatches));
      }
      std::printf("\n");
    } catch (const Error& e) {
      // A device class holds the kernels to limits below the driver's: a case it cannot run
      // is refused by name (Unsupported), which is the class's answer, not a failure.
      if (!context.profile().device_class.empty() && e.code() == ErrorCode::Unsupported) {
        ++refused;
        refusals_of_op[c.op].insert(e.what());
        std::printf("REFUSED  %-57s %-9s %s\n", c.name.c_str(), variant, e.what());
      } else {
        ++failed;
        std::printf("FAIL  %-60s %-9s error: %s\n", c.name.c_str(), variant, e.what());
      }
    }
    std::fflush(stdout);
  };
  for (const Case* c : cases) {
    const std::string missing = c->unavailable ? c->unavailable(ctx.profile()) : "";
    if (!missing.empty()) {
      ++not_run;
      std::printf("NOT RUN  %-57s the device lacks %s\n", c->name.c_str(), missing.c_str());
      continue;
    }
    run_one(ctx, *c, main_pass_label(ctx.profile()));
    if (!c->with_and_without_int8_dot) continue;
    for (const AccuPass& pass : passes) run_one(*pass.ctx, *c, pass.label);
  }
  // Which kernels each op ran, and why the class refused it where it did: the table of
  // kernels by device class (docs/DEVICES.md).
  std::printf("kernels by op (%s):\n", ctx.profile().device_class.empty()
                                           ? ctx.profile().name.c_str()
                                           : ctx.profile().device_class.c_str());
  for (const auto& [op, kernels] : kernels_of_op) {
    std::string list;
    for (const auto& k : kernels) list += (list.empty() ? "" : " ") + k;
    std::printf("  %-34s runs: %s\n", op.c_str(), list.empty() ? "-" : list.c_str());
    for (const auto& why : refusals_of_op[op])
      std::printf("  %-34s refused: %s\n", "", why.c_str());
  }
  std::printf("ACCU: %d passed, %d failed", passed, failed);
  if (refused) std::printf(", %d refused (beyond the device class's limits)", refused);
  if (not_run) std::printf(", %d not run (the device lacks what they need)", not_run);
  std::printf("\n");
  return failed;
}

// ---------------------------------------------------------------------------------------
// PERF

struct PerfRow {
  const Case* c;
  double median_us = 0, min_us = 0;  // end to end
  double kernel_us = 0;              // median of the dispatches' own spans, summed
  double rate = 0, share = 0;
  std::string status = "ok";
  std::vector<graph::NodeKernelStatistics> kernel_stats;  // with --kernel-stats
  // The conditions (PerfChecks.h): per timed repetition in order, end to end and kernel µs;
  // the clock probe's GOP/s just before and after the timed submission (0: no probe); the
  // submission's wall-clock span (Unix seconds); where the tensors landed.
  std::vector<double> end_to_end_series, kernel_series;
  double probe_before = 0, probe_after = 0;
  double wall_start = 0, wall_end = 0;
  PlacementReport placement;
};

// A probe share below this marks a case measured at lowered clocks.
constexpr double kClockWarnShare = 0.85;

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct Repetitions {
  uint32_t warmup, timed;
};

// Warm-up and timed repetitions of a PERF case.
// GPU: at least --warmup, and enough warm-up for --warmup-ms of GPU time. A GPU lowers its
// clocks while the CPU prepares the next case; a fixed count of short repetitions left later
// cases of a run measured at the lower clocks (on an H100 a GEMV case measured 197 us after
// other cases, 59 us alone).
// CPU device (lavapipe): --warmup and --iterations, there are no clocks to ramp; but past 50 ms
// per repetition (the H100-sized cases take up to seconds, and 35 repetitions of them stretched
// the README's first command by minutes) 3 timed repetitions and no warm-up.
Repetitions choose_repetitions(graph::ComputeGraph& g, const Options& o) {
  Repetitions r{static_cast<uint32_t>(o.warmup), static_cast<uint32_t>(o.iterations)};
  if (o.warmup_ms == 0 && !g.profile().is_cpu()) return r;
  const std::vector<double> probe = g.benchmark(0, g.profile().is_cpu() ? 1 : 3).end_to_end_us;
  const double per_rep_us = std::max(*std::min_element(probe.begin(), probe.end()), 1.0);
  if (g.profile().is_cpu()) {
    if (per_rep_us > 50000.0) r = {0, std::min<uint32_t>(r.timed, 3)};
    return r;
  }
  const double wanted = 1000.0 * o.warmup_ms / per_rep_us;
  r.warmup = std::max(r.warmup, static_cast<uint32_t>(std::min(wanted, 100000.0)));
  return r;
}

// `probe` (GPU devices): measured around the timed submission, and settled before it with
// --settle-ms.
PerfRow run_perf_case(vk::Context& ctx, const Case& c, const Options& o, ClockProbe* probe) {
  PerfRow row{&c};
  try {
    auto instance = c.make();
    graph::ComputeGraph g(ctx);
    instance->build(g);
    g.prepare();
    row.placement = report_placement(g, ctx.memory());
    std::mt19937 rng(static_cast<uint32_t>(o.seed));
    instance->write_inputs(g, rng);
    g.execute();  // uploads the inputs once
    if (probe && o.settle_ms > 0) probe->settle(0.9, o.settle_ms);
    const Repetitions reps = choose_repetitions(g, o);
    if (probe) row.probe_before = probe->measure();
    row.wall_start = unix_seconds();
    auto [times, kernels] = g.benchmark(reps.warmup, reps.timed);
    row.wall_end = unix_seconds();
    if (probe) row.probe_after = probe->measure();
    VKD_CHECK(!times.empty() && times.front() > 0, ErrorCode::Unsupported,
              "no GPU timestamps on this device");
    row.end_to_end_series = times;
    row.kernel_series = kernels;
    std::sort(times.begin(), times.end());
    std::sort(kernels.begin(), kernels.end());
    row.median_us = times[times.size() / 2];
    row.min_us = times.front();
    row.kernel_us = kernels[kernels.size() / 2];
    const PerfWork w = instance->work();
    row.rate = (c.metric == Metric::GBps ? w.bytes : w.ops) / (row.median_us * 1e3);  // G/s
    if (o.kernel_stats) row.kernel_stats = g.kernel_statistics();
  } catch (const Error& e) {
    row.status = std::string(e.code() == ErrorCode::Unsupported ? "SKIP: " : "FAIL: ") + e.what();
  }
  return row;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// A statistic's text as a JSON value: numbers and booleans bare, anything else a string.
std::string json_value(const std::string& text) {
  if (text == "true" || text == "false") return text;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (!text.empty() && end && *end == '\0' && std::isfinite(v)) return text;
  return "\"" + json_escape(text) + "\"";
}

// "    kernel: Name=value, Name=value" (when the driver made several executables, each one
// named in brackets before its statistics).
std::string kernel_stats_line(const graph::NodeKernelStatistics& node) {
  std::string line = "    " + node.kernel + ":";
  if (node.executables.empty()) line += " (no executables reported)";
  for (size_t e = 0; e < node.executables.size(); ++e) {
    const auto& exe = node.executables[e];
    if (node.executables.size() > 1) line += (e ? "; [" : " [") + exe.name + "]";
    for (size_t i = 0; i < exe.statistics.size(); ++i) {
      line += (i ? ", " : " ") + exe.statistics[i].name + "=" + exe.statistics[i].value;
    }
  }
  return line;
}

std::string kernel_stats_json(const std::vector<graph::NodeKernelStatistics>& nodes) {
  std::string out = "[";
  for (size_t n = 0; n < nodes.size(); ++n) {
    out += std::string(n ? ", " : "") + "{\"op\": \"" + json_escape(nodes[n].op) +
           "\", \"kernel\": \"" + json_escape(nodes[n].kernel) + "\", \"executables\": [";
    for (size_t e = 0; e < nodes[n].executables.size(); ++e) {
      const auto& exe = nodes[n].executables[e];
      out += std::string(e ? ", " : "") + "{\"name\": \"" + json_escape(exe.name) +
             "\", \"statistics\": {";
      for (size_t i = 0; i < exe.statistics.size(); ++i) {
        out += std::string(i ? ", " : "") + "\"" + json_escape(exe.statistics[i].name) +
               "\": " + json_value(exe.statistics[i].value);
      }
      out += "}}";
    }
    out += "]}";
  }
  return out + "]";
}

// The clock probe's lower reading around a case as a share of its best in the run (0: none).
double clock_share(const PerfRow& r, double best_probe) {
  if (best_probe <= 0 || r.probe_before <= 0) return 0;
  return std::min(r.probe_before, r.probe_after) / best_probe;
}

// "12:34:56.789" (UTC) of Unix time t, to line a case up with other logs of the machine.
std::string utc_clock(double t) {
  const auto secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((t - double(secs)) * 1000.0));
  return buf;
}

// The lines under a case's row: where its tensors landed, the clock probe and when it ran, on
// GPUs the repetitions when they vary by more than 1.5x, and a WARNING per unexpected condition.
void print_conditions(const PerfRow& r, double best_probe) {
  std::printf("    memory: %s\n", r.placement.summary.c_str());
  const double share = clock_share(r, best_probe);
  if (share > 0) {
    std::printf(
        "    clock probe: %.0f%% before, %.0f%% after (of its best in this run); timed "
        "%s-%s UTC\n",
        100.0 * r.probe_before / best_probe, 100.0 * r.probe_after / best_probe,
        utc_clock(r.wall_start).c_str(), utc_clock(r.wall_end).c_str());
  }
  const auto& t = r.end_to_end_series;
  const auto [lo, hi] = std::minmax_element(t.begin(), t.end());
  if (share > 0 && !t.empty() && *hi > 1.5 * *lo) {  // GPUs (CPU devices vary anyway)
    std::printf("    repetitions vary: end to end %.2f .. %.2f us; in order:", *lo, *hi);
    for (double v : t) std::printf(" %.1f", v);
    std::printf("\n");
  }
  for (const auto& w : r.placement.warnings) std::printf("    WARNING: %s\n", w.c_str());
  if (share > 0 && share < kClockWarnShare) {
    std::printf(
        "    WARNING: the clock probe ran at %.0f%% of its best in this run around this "
        "case: the GPU's clocks were lowered, its figures do not show the kernel\n",
        100.0 * share);
  }
}

std::string json_numbers(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.3f", i ? ", " : "", v[i]);
    out += buf;
  }
  return out + "]";
}

// A row's reference (etvk/ cases) and conditions as JSON members, each with a leading ", ".
std::string json_conditions(const PerfRow& r, double best_probe) {
  std::string out;
  if (r.c->reference_us > 0) {
    out += ", \"reference_us\": " + std::to_string(r.c->reference_us) + ", \"ratio\": " +
           std::to_string(r.median_us > 0 ? r.median_us / r.c->reference_us : 0.0);
  }
  out += ", \"probe_before_gops\": " + std::to_string(r.probe_before) +
         ", \"probe_after_gops\": " + std::to_string(r.probe_after) +
         ", \"clock_share\": " + std::to_string(clock_share(r, best_probe)) +
         ", \"wall_start\": " + std::to_string(r.wall_start) +
         ", \"wall_end\": " + std::to_string(r.wall_end) +
         ", \"end_to_end_series_us\": " + json_numbers(r.end_to_end_series) +
         ", \"kernel_series_us\": " + json_numbers(r.kernel_series) +
         ", \"placement\": {\"summary\": \"" + json_escape(r.placement.summary) +
         "\", \"memory_types\": [";
  for (size_t i = 0; i < r.placement.memory_types.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(r.placement.memory_types[i]);
  }
  out += "], \"min_offset_alignment\": " + std::to_string(r.placement.min_offset_alignment) +
         ", \"warnings\": [";
  for (size_t i = 0; i < r.placement.warnings.size(); ++i) {
    out += std::string(i ? ", " : "") + "\"" + json_escape(r.placement.warnings[i]) + "\"";
  }
  return out + "]}";
}

int run_perf(vk::Context& ctx, const Registry& registry, const std::vector<const Case*>& cases,
             const Options& o) {
  std::map<std::string, double> peaks;  // peak case name -> rate
  std::vector<PerfRow> rows;
  for (const Case& c : registry.cases()) {
    if (c.name.rfind("peak/", 0) != 0) continue;
    PerfRow row = run_perf_case(ctx, c, o, nullptr);
    if (row.status == "ok") peaks[c.name] = row.rate;
    row.share = row.status == "ok" ? 1.0 : 0.0;
    rows.push_back(row);
  }
  // GPUs: the clock probe, first measured right after the peaks kept the GPU busy.
  std::unique_ptr<ClockProbe> probe;
  if (!ctx.profile().is_cpu() && ctx.profile().timestamps) {
    probe = std::make_unique<ClockProbe>(ctx);
    probe->settle(1.0, 300);
  }
  const double peak_gbps = peaks["peak/copy"], peak_gops = peaks["peak/int8_dot"];
  for (const Case* c : cases) {
    if (c->name.rfind("peak/", 0) == 0 || peaks.count(c->name)) continue;
    // A case held to a ceiling case (not a peak/ one) that this run has not measured yet: that
    // case first, whether or not the filter selected it.
    if (!c->peak.empty() && !peaks.count(c->peak)) {
      for (const Case& ceiling : registry.cases()) {
        if (ceiling.name != c->peak) continue;
        PerfRow row = run_perf_case(ctx, ceiling, o, probe.get());
        peaks[ceiling.name] = row.status == "ok" ? row.rate : 0.0;
        row.share = row.status == "ok" ? 1.0 : 0.0;
        rows.push_back(row);
      }
    }
    PerfRow row = run_perf_case(ctx, *c, o, probe.get());
    if (c->name.rfind("ceiling/", 0) == 0 && row.status == "ok") peaks[c->name] = row.rate;
    const double peak = !c->peak.empty()            ? peaks[c->peak]
                        : c->metric == Metric::GBps ? peak_gbps
                                                    : peak_gops;
    row.share = peak > 0 ? row.rate / peak : 0;
    rows.push_back(row);
    std::fflush(stdout);
  }
  const double best_probe = probe ? probe->best() : 0;

  std::printf("\nPERF on %s (warm-up: %d repetitions%s, then %d timed; GPU timestamps)\n",
              ctx.profile().name.c_str(), o.warmup,
              ctx.profile().is_cpu() || o.warmup_ms == 0
                  ? ""
                  : (" and >= " + std::to_string(o.warmup_ms) + " ms").c_str(),
              o.iterations);
  std::printf("measured peaks: copy %.1f GB/s (read+write), int8 dot %.1f GOP/s", peak_gbps,
              peak_gops);
  if (peaks.count("peak/int8_coopmat")) {
    std::printf(", int8 cooperative matrix %.1f GOP/s", peaks["peak/int8_coopmat"]);
  }
  std::printf("\n");
  if (probe) {
    std::printf("clock probe (int8 dot loop, ~2^18 invocations): best %.1f GOP/s%s\n", best_probe,
                o.settle_ms > 0 ? (", settled to 90% of it before each case (up to " +
                                   std::to_string(o.settle_ms) + " ms)")
                                      .c_str()
                                : "");
  }
  if (o.kernel_stats && !ctx.captures_kernel_statistics()) {
    std::printf(
        "kernel statistics: the device does not offer "
        "VK_KHR_pipeline_executable_properties\n");
  }
  std::printf(
      "ref us: the reference backend's latency for the same problem on an H100 "
      "(etvk/ cases, test/custom_ops/EtvkShapes.h); ours/ref: median us / ref us\n");
  std::printf("%-58s %-14s %-30s %11s %11s %11s %12s %8s %9s %8s\n", "case", "shape", "layout",
              "median us", "min us", "kernel us", "rate", "of peak", "ref us", "ours/ref");
  int failures = 0, warned = 0;
  for (const auto& r : rows) {
    if (r.status != "ok") {
      std::printf("%-58s %-14s %-30s %s\n", r.c->name.c_str(), r.c->shape.c_str(),
                  r.c->layout.c_str(), r.status.c_str());
      failures += r.status.rfind("FAIL", 0) == 0;
      continue;
    }
    std::string reference;
    if (r.c->reference_us > 0) {
      char buf[48];
      std::snprintf(buf, sizeof(buf), " %9.1f %7.2fx", r.c->reference_us,
                    r.median_us / r.c->reference_us);
      reference = buf;
    }
    std::printf("%-58s %-14s %-30s %11.2f %11.2f %11.2f %7.1f %s %7.1f%%%s\n", r.c->name.c_str(),
                r.c->shape.c_str(), r.c->layout.c_str(), r.median_us, r.min_us, r.kernel_us, r.rate,
                r.c->metric == Metric::GBps ? "GB/s " : "GOP/s", 100.0 * r.share,
                reference.c_str());
    for (const auto& node : r.kernel_stats) std::printf("%s\n", kernel_stats_line(node).c_str());
    print_conditions(r, best_probe);
    const double share = clock_share(r, best_probe);
    warned += !r.placement.warnings.empty() || (share > 0 && share < kClockWarnShare);
  }
  std::printf("conditions: %d of %zu cases with a WARNING\n", warned, rows.size());

  if (!o.json_file.empty()) {
    std::ofstream out(o.json_file);
    VKD_CHECK(out.good(), ErrorCode::InvalidArgument, "cannot write JSON file '", o.json_file, "'");
    out << "{\n  \"device\": \"" << json_escape(ctx.profile().name) << "\",\n"
        << "  \"peaks\": {\"copy_gbps\": " << peak_gbps << ", \"int8_dot_gops\": " << peak_gops
        << ", \"int8_coopmat_gops\": " << peaks["peak/int8_coopmat"]
        << ", \"clock_probe_best_gops\": " << best_probe << "},\n  \"results\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      out << "    {\"case\": \"" << json_escape(r.c->name) << "\", \"op\": \"" << r.c->op
          << "\", \"shape\": \"" << r.c->shape << "\", \"layout\": \"" << json_escape(r.c->layout)
          << "\", \"status\": \"" << json_escape(r.status) << "\", \"median_us\": " << r.median_us
          << ", \"min_us\": " << r.min_us << ", \"kernel_us\": " << r.kernel_us << ", \""
          << (r.c->metric == Metric::GBps ? "gbps" : "gops") << "\": " << r.rate
          << ", \"share_of_peak\": " << r.share << json_conditions(r, best_probe);
      if (o.kernel_stats) out << ", \"kernel_stats\": " << kernel_stats_json(r.kernel_stats);
      out << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "  ]\n}\n";
    std::printf("wrote %s\n", o.json_file.c_str());
  }
  return failures;
}

int run(int argc, char** argv) {
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  Registry registry;
#define VKD_FAMILY(family) register_##family##_cases(registry);
#include "test/custom_ops/CaseFamilies.inc"
#undef VKD_FAMILY

  std::regex filter;
  try {
    filter = std::regex(o.filter);
  } catch (const std::regex_error& e) {
    std::fprintf(stderr, "vkd_custom_ops: bad --filter regex '%s': %s\n", o.filter.c_str(),
                 e.what());
    return 2;
  }
  std::vector<const Case*> accu_cases, perf_cases;
  for (const Case& c : registry.cases()) {
    if (!std::regex_search(c.name, filter)) continue;
    if (c.accu) accu_cases.push_back(&c);
    if (c.perf) perf_cases.push_back(&c);
  }
  // A filter that selects nothing in the chosen mode is a mistake (a renamed case, a test
  // command that would pass without running anything), not a pass.
  const bool selects_none = (!o.accu || accu_cases.empty()) && (!o.perf || perf_cases.empty());
  if (!o.list && selects_none) {
    std::fprintf(stderr, "vkd_custom_ops: --filter '%s' selects no %s case\n", o.filter.c_str(),
                 o.accu && o.perf ? "ACCU or PERF"
                 : o.accu         ? "ACCU"
                                  : "PERF");
    return 2;
  }
  if (o.list) {
    for (const Case* c : accu_cases) std::printf("accu  %s\n", c->name.c_str());
    for (const Case* c : perf_cases) std::printf("perf  %s\n", c->name.c_str());
    return 0;
  }

  vk::ContextOptions options = vk::ContextOptions::from_env();
  if (!o.device.empty()) options.device_selector = o.device;
  options.capture_kernel_statistics = o.kernel_stats;
  vk::Context ctx(options);
  std::printf("device: %s", ctx.profile().summary().c_str());

  int failures = 0;
  if (o.accu) {
    std::vector<AccuPass> passes;
    const bool wants_no_dot = std::any_of(accu_cases.begin(), accu_cases.end(), [](const Case* c) {
      return c->with_and_without_int8_dot;
    });
    if (wants_no_dot && ctx.profile().int8_dot_product) {
      vk::ContextOptions no_dot_options = options;
      no_dot_options.overrides.disable_int8_dot = true;
      // The same fallback pass covers kernels' paths for devices without subgroup arithmetic
      // (and, on a CPU device, the GPU kernels' fallback paths).
      no_dot_options.overrides.disable_subgroup_arithmetic = true;
      no_dot_options.overrides.disable_cpu_kernels = true;
      passes.push_back({std::make_unique<vk::Context>(no_dot_options), "fallback"});
    }
    if (wants_no_dot && ctx.profile().cpu_kernels) {
      // A CPU device runs its own kernels by default (DeviceProfile::cpu_kernels); the GPU
      // kernels, the only ones other devices run, get this pass.
      vk::ContextOptions gpu_options = options;
      gpu_options.overrides.disable_cpu_kernels = true;
      passes.push_back({std::make_unique<vk::Context>(gpu_options),
                        ctx.profile().int8_dot_product ? "gpu-sdot" : "gpu"});
    }
    failures += run_accu(ctx, passes, accu_cases, o.seed, o.repeat);
    for (const AccuPass& pass : passes) {
      const auto& log = pass.ctx->instance().validation_log();
      failures += static_cast<int>(log.error_count() + log.warning_count());
    }
  }
  if (o.perf) failures += run_perf(ctx, registry, perf_cases, o);

  const auto& log = ctx.instance().validation_log();
  if (ctx.instance().validation_enabled()) {
    std::printf("validation layer: %u errors, %u warnings\n", log.error_count(),
                log.warning_count());
    failures += static_cast<int>(log.error_count() + log.warning_count());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace vkd::custom_ops

int main(int argc, char** argv) {
  try {
    return vkd::custom_ops::run(argc, argv);
  } catch (const vkd::Error& e) {
    std::fprintf(stderr, "vkd_custom_ops: error (%s): %s\n", vkd::to_string(e.code()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkd_custom_ops: error: %s\n", e.what());
    return 1;
  }
}
