// What a compiler pass did, for the compile driver's report: one line per decision.
#pragma once

#include <string>
#include <vector>

namespace vkd::compiler {

struct PassReport {
  std::string pass;                // "fuse_and_lower"
  std::vector<std::string> lines;  // human-readable, in a deterministic order
};

}  // namespace vkd::compiler
