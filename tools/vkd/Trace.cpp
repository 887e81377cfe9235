#include "tools/vkd/Trace.h"

#include <cmath>
#include <cstdio>

namespace vkd::cli {
namespace {

std::string json_number(double v) {
  if (!std::isfinite(v)) v = 0.0;  // JSON has no NaN/Inf
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

TraceEvent metadata(const char* what, int tid, const std::string& name) {
  TraceEvent e;
  e.name = what;
  e.phase = 'M';
  e.pid = kTracePid;
  e.tid = tid;
  e.args = {{"name", name}};
  return e;
}

}  // namespace

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::vector<TraceEvent> make_run_trace(const std::string& title, const std::string& device,
                                       double host_wall_us, const std::vector<TraceNode>& nodes) {
  std::vector<TraceEvent> events;
  events.push_back(metadata("process_name", kTraceHostTid, title));
  events.push_back(metadata("thread_name", kTraceHostTid, "host"));
  events.push_back(metadata("thread_name", kTraceGpuTid, "GPU: " + device));

  TraceEvent host;
  host.name = "execute";
  host.category = "host";
  host.ts_us = 0.0;
  host.dur_us = host_wall_us;
  host.tid = kTraceHostTid;
  host.args = {{"nodes", std::to_string(nodes.size())}};
  events.push_back(host);

  double t = 0.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    TraceEvent e;
    e.name = nodes[i].op;
    e.category = "gpu";
    e.ts_us = t;
    e.dur_us = nodes[i].gpu_us;
    e.tid = kTraceGpuTid;
    e.args = {
        {"node", std::to_string(i)}, {"kernel", nodes[i].kernel}, {"tensors", nodes[i].tensors}};
    events.push_back(e);
    t += nodes[i].gpu_us;
  }
  return events;
}

std::string trace_json(const std::vector<TraceEvent>& events) {
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    out += "  {\"name\": " + json_string(e.name);
    if (!e.category.empty()) out += ", \"cat\": " + json_string(e.category);
    out += ", \"ph\": " + json_string(std::string(1, e.phase));
    if (e.phase != 'M') {
      out += ", \"ts\": " + json_number(e.ts_us) + ", \"dur\": " + json_number(e.dur_us);
    }
    out += ", \"pid\": " + std::to_string(e.pid) + ", \"tid\": " + std::to_string(e.tid);
    if (!e.args.empty()) {
      out += ", \"args\": {";
      for (size_t a = 0; a < e.args.size(); ++a) {
        if (a) out += ", ";
        out += json_string(e.args[a].first) + ": " + json_string(e.args[a].second);
      }
      out += "}";
    }
    out += i + 1 < events.size() ? "},\n" : "}\n";
  }
  return out + "]}\n";
}

}  // namespace vkd::cli
