// Chrome / Perfetto trace of one `vkd run` (JSON Trace Event Format: an object with a
// "traceEvents" array; "X" complete events with ts/dur in microseconds, "M" metadata events
// naming the process and the tracks). Load the file in https://ui.perfetto.dev or
// chrome://tracing.
//
// Pure C++, no Vulkan and no delegate: the CLI tests link it on their own.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace vkd::cli {

struct TraceEvent {
  std::string name;
  std::string category;
  char phase = 'X';  // 'X' complete event, 'M' metadata (ts/dur not written)
  double ts_us = 0.0;
  double dur_us = 0.0;
  int pid = 1;
  int tid = 1;
  std::vector<std::pair<std::string, std::string>> args;  // written as JSON strings
};

// One dispatch node of the run, as Delegate::last_profile() reports it.
struct TraceNode {
  std::string op;
  std::string kernel;
  std::string tensors;
  double gpu_us = 0.0;
};

inline constexpr int kTracePid = 1;
inline constexpr int kTraceHostTid = 1;
inline constexpr int kTraceGpuTid = 2;

// The events of one run: metadata naming the process (`title`) and the two tracks, the host
// track with one "execute" event of `host_wall_us`, and the GPU track (named after `device`)
// with one event per node, laid back to back from ts 0 (GPU timestamps give each node's
// duration, not its start, so the gaps between dispatches are not shown).
std::vector<TraceEvent> make_run_trace(const std::string& title, const std::string& device,
                                       double host_wall_us, const std::vector<TraceNode>& nodes);

// {"displayTimeUnit": "ms", "traceEvents": [ ... ]} with one event per line.
std::string trace_json(const std::vector<TraceEvent>& events);

// `s` as a JSON string literal, quotes included (control characters as \u00XX; bytes >= 0x80
// are passed through, so UTF-8 stays UTF-8).
std::string json_string(const std::string& s);

}  // namespace vkd::cli
