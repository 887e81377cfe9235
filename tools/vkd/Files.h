// Output files of the vkd commands: checked before any work, written so that a file is either
// absent or complete, and never replaced without --force.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkd::cli {

// Appends to `errors` why `path` may not be written: it is a directory, or it exists and
// `force` is false ("<what>: '<path>' already exists (pass --force to overwrite)").
void check_target_file(const std::string& path, bool force, const std::string& what,
                       std::vector<std::string>& errors);

// Writes to a temporary file in the same directory, then links it into place (fails with exit 2
// if the target appeared meanwhile) or, with `force`, renames it over the target.
void write_file(const std::string& path, const void* data, size_t size, bool force);
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool force) {
  write_file(path, bytes.data(), bytes.size(), force);
}

// The directory exists and a file can be created in it (probed: root passes access(W_OK)
// everywhere); else CliError(2) naming `what`.
void check_writable_dir(const std::string& dir, const std::string& what);

}  // namespace vkd::cli
