#include "compiler/StrictJson.h"

#include <limits>
#include <set>
#include <vector>

#include "core/Error.h"

namespace vkd::compiler {

using Json = nlohmann::ordered_json;

namespace {

// `depth`: the parser's count of the arrays and objects around the one that starts (0 at the
// top level). Refused before the document grows deeper: nlohmann's dump(), copies and
// comparisons recurse once per level, which ~5,000 levels overflow on a 512 KiB thread stack.
void check_depth(int depth) {
  VKD_CHECK(depth < kMaxJsonDepth, ErrorCode::InvalidArgument, "JSON nested deeper than ",
            kMaxJsonDepth, " levels (arrays and objects)");
}

}  // namespace

Json parse_json_strict(const std::string& text) {
  struct Frame {
    std::string name;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  std::string last_key = "(top level)";
  Json::parser_callback_t cb = [&](int depth, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        check_depth(depth);
        stack.push_back({last_key, {}});
        break;
      case Json::parse_event_t::array_start: check_depth(depth); break;
      case Json::parse_event_t::key: {
        const std::string key = parsed.get<std::string>();
        if (!stack.empty()) {
          VKD_CHECK(stack.back().keys.insert(key).second, ErrorCode::InvalidArgument,
                    "duplicate key '", key, "' in JSON object '", stack.back().name, "'");
        }
        last_key = key;
        break;
      }
      case Json::parse_event_t::object_end:
        if (!stack.empty()) stack.pop_back();
        break;
      default: break;
    }
    return true;
  };
  try {
    return Json::parse(text, cb);
  } catch (const nlohmann::json::parse_error& e) {
    VKD_THROW(ErrorCode::InvalidArgument, "malformed JSON at byte ", e.byte, ": ", e.what());
  } catch (const nlohmann::json::exception& e) {
    VKD_THROW(ErrorCode::InvalidArgument, "malformed JSON: ", e.what());
  }
}

bool json_int(const nlohmann::ordered_json& j, int64_t* out) {
  if (j.is_number_unsigned()) {
    const uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = static_cast<int64_t>(u);
    return true;
  }
  if (j.is_number_integer()) {
    *out = j.get<int64_t>();
    return true;
  }
  return false;
}

}  // namespace vkd::compiler
