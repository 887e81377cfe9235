// tools/vkd/Trace: the trace JSON parses back (with a small JSON reader written here) into the
// Trace Event Format structure Perfetto expects: metadata naming the tracks, one host "execute"
// event, GPU node events laid back to back, strings escaped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/vkd/Trace.h"

namespace vkd::cli {
namespace {

// --- a minimal JSON reader: enough to check structure and values --------------------------------
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool b = false;
  double number = 0.0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& at(const std::string& key) const {
    const auto it = fields.find(key);
    if (kind != Kind::Object || it == fields.end()) throw std::runtime_error("no key " + key);
    return it->second;
  }
  bool has(const std::string& key) const { return fields.count(key) > 0; }
};

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}
  Json document() {
    Json v = value();
    space();
    if (i_ != s_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(i_));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }
  bool eat(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void need(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word(const char* w) {
    const std::string ws(w);
    if (s_.compare(i_, ws.size(), ws) != 0) return false;
    i_ += ws.size();
    return true;
  }
  std::string string() {
    need('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') break;
      if (c < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i_ >= s_.size()) fail("bad escape");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          const long cp = std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16);
          if (cp >= 0x80) fail("test reader handles only ASCII \\u escapes");
          out += static_cast<char>(cp);
          i_ += 4;
          break;
        }
        default: fail("bad escape");
      }
    }
    return out;
  }
  Json value() {
    space();
    if (i_ >= s_.size()) fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::Kind::Object;
      ++i_;
      if (eat('}')) return v;
      do {
        space();
        const std::string key = string();
        need(':');
        if (!v.fields.emplace(key, value()).second) fail("duplicate key " + key);
      } while (eat(','));
      need('}');
    } else if (c == '[') {
      v.kind = Json::Kind::Array;
      ++i_;
      if (eat(']')) return v;
      do {
        v.items.push_back(value());
      } while (eat(','));
      need(']');
    } else if (c == '"') {
      v.kind = Json::Kind::String;
      v.str = string();
    } else if (word("true") || word("false")) {
      v.kind = Json::Kind::Bool;
      v.b = s_[i_ - 1] == 'e' && s_[i_ - 2] == 'u';
    } else if (word("null")) {
      v.kind = Json::Kind::Null;
    } else {
      const char* begin = s_.c_str() + i_;
      char* end = nullptr;
      v.kind = Json::Kind::Number;
      v.number = std::strtod(begin, &end);
      if (end == begin) fail("unexpected character");
      i_ += static_cast<size_t>(end - begin);
    }
    return v;
  }

  const std::string& s_;
  size_t i_ = 0;
};

Json parse(const std::string& text) { return JsonReader(text).document(); }

// ---------------------------------------------------------------------------------------------
TEST(Trace, JsonReaderRejectsBrokenText) {
  EXPECT_THROW(parse("{\"a\": [1, 2}"), std::runtime_error);
  EXPECT_THROW(parse("{\"a\": \"x\ny\"}"), std::runtime_error);
  EXPECT_THROW(parse("{\"a\": 1} x"), std::runtime_error);
  EXPECT_NO_THROW(parse("{\"a\": [1, -2.5e3, true, null, \"\\u0001\"]}"));
}

TEST(Trace, RunTraceParsesBackWithTracksAndBackToBackNodes) {
  const std::vector<TraceNode> nodes = {
      {"q8ta_quantize", "q8ta_quantize_buffer", "out=[1,5,7,9] int8x4; in=[1,5,7,9] float32", 12.5},
      {"q8ta_convert", "q8ta_convert_4w4c_4c1w", "out=...", 3.25},
      {"q8ta_dequantize", "weird \"kernel\"\\name\n\t\x01", "µs ünïcode", 7.0},
  };
  const std::string text = trace_json(make_run_trace("vkd run m.vkd", "Test GPU", 1234.5, nodes));
  const Json root = parse(text);
  ASSERT_EQ(root.kind, Json::Kind::Object);
  EXPECT_EQ(root.at("displayTimeUnit").str, "ms");
  const Json& events = root.at("traceEvents");
  ASSERT_EQ(events.kind, Json::Kind::Array);

  std::map<int, std::string> thread_names;
  std::string process_name;
  std::vector<const Json*> host, gpu;
  for (const Json& e : events.items) {
    ASSERT_EQ(e.kind, Json::Kind::Object);
    const std::string ph = e.at("ph").str;
    EXPECT_EQ(e.at("pid").number, kTracePid);
    const int tid = static_cast<int>(e.at("tid").number);
    if (ph == "M") {
      EXPECT_FALSE(e.has("ts"));
      if (e.at("name").str == "thread_name") thread_names[tid] = e.at("args").at("name").str;
      if (e.at("name").str == "process_name") process_name = e.at("args").at("name").str;
      continue;
    }
    ASSERT_EQ(ph, "X");
    ASSERT_EQ(e.at("ts").kind, Json::Kind::Number);
    ASSERT_EQ(e.at("dur").kind, Json::Kind::Number);
    (tid == kTraceGpuTid ? gpu : host).push_back(&e);
  }
  EXPECT_EQ(process_name, "vkd run m.vkd");
  EXPECT_EQ(thread_names[kTraceHostTid], "host");
  EXPECT_EQ(thread_names[kTraceGpuTid], "GPU: Test GPU");

  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0]->at("name").str, "execute");
  EXPECT_DOUBLE_EQ(host[0]->at("ts").number, 0.0);
  EXPECT_DOUBLE_EQ(host[0]->at("dur").number, 1234.5);

  ASSERT_EQ(gpu.size(), nodes.size());
  double t = 0.0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(gpu[i]->at("name").str, nodes[i].op);
    EXPECT_NEAR(gpu[i]->at("ts").number, t, 1e-3);
    EXPECT_NEAR(gpu[i]->at("dur").number, nodes[i].gpu_us, 1e-3);
    EXPECT_EQ(gpu[i]->at("args").at("kernel").str, nodes[i].kernel);
    EXPECT_EQ(gpu[i]->at("args").at("tensors").str, nodes[i].tensors);
    EXPECT_EQ(gpu[i]->at("args").at("node").str, std::to_string(i));
    t += nodes[i].gpu_us;
  }
}

TEST(Trace, EmptyProfileStillGivesTheHostEvent) {
  const Json root = parse(trace_json(make_run_trace("t", "d", 10.0, {})));
  size_t complete = 0;
  for (const Json& e : root.at("traceEvents").items) complete += e.at("ph").str == "X";
  EXPECT_EQ(complete, 1u);
}

TEST(Trace, NonFiniteDurationsStayValidJson) {
  const std::vector<TraceNode> nodes = {{"a", "k", "t", std::nan("")}, {"b", "k", "t", INFINITY}};
  const Json root = parse(trace_json(make_run_trace("t", "d", std::nan(""), nodes)));
  for (const Json& e : root.at("traceEvents").items) {
    if (e.at("ph").str == "X") {
      EXPECT_TRUE(std::isfinite(e.at("dur").number));
    }
  }
}

TEST(Trace, JsonStringEscapes) {
  EXPECT_EQ(json_string("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
  EXPECT_EQ(parse(json_string("tab\there \"q\" \\ \x1f")).str, "tab\there \"q\" \\ \x1f");
}

}  // namespace
}  // namespace vkd::cli
