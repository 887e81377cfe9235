// The files of the vkd commands.
//
// Inputs: read through core/InputFile.h (regular files only, capped; shared with
// vkd::Model), a failure as CliError(2).
//
// Outputs: every target is checked before anything is written (FilePlan), a file is written so
// that it is either absent or complete, an existing file is replaced only with --force, and never
// a file the same command reads (--force may replace an earlier output, not an input).
//
// No Vulkan, no delegate and no compiler: the .npy reader and the CLI tests use it on its own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/InputFile.h"

namespace vkd::cli {

// vkd::read_input_file (core/InputFile.h: regular files only, capped) with its error as
// CliError(2) "cannot read <what> '<path>': <reason>".
std::vector<uint8_t> read_input_file(const std::string& path, const std::string& what,
                                     uint64_t max_bytes);

// The files one command reads and writes, checked together before anything is written. Every
// problem is collected; check() throws CliError(2) listing them, one per line:
//   - an output whose directory does not exist or cannot be written to (probed);
//   - an output that is a directory or another non-regular file (never replaced);
//   - an existing output without --force;
//   - an output that is one of the inputs: same device and inode, so a symlink, a hard link or
//     another spelling of the path is caught ("<label> is <role>; refusing to overwrite a file
//     this command reads"), with or without --force;
//   - two outputs that are the same file.
class FilePlan {
 public:
  // `role` names the input in messages: "the graph", "the input 'x'".
  void add_input(const std::string& role, const std::string& path);
  // `what` prefixes the per-file messages as before ("output", "trace", "dot file"); `label`
  // names the output where it is compared with others: "-o m.vkd", "--trace t.json",
  // "output 'y' (out/y.npy)".
  void add_output(const std::string& what, const std::string& label, const std::string& path);
  // A directory the command will create (run --output-dir): outputs in it need no existing
  // directory; its parent must exist and be writable (checked by the caller).
  void add_new_directory(const std::string& dir);

  void check(bool force) const;

 private:
  struct Input {
    std::string role, path;
  };
  struct Output {
    std::string what, label, path;
  };
  std::vector<Input> inputs_;
  std::vector<Output> outputs_;
  std::vector<std::string> new_dirs_;
};

// Where `path` is: the device and inode of the file itself (symlinks followed) when it exists,
// else those of its nearest existing ancestor directory plus the rest of the path. Two paths
// with equal keys name the same file (or will, once written).
struct FileKey {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string rest;  // "" for an existing file
  bool operator==(const FileKey& o) const {
    return std::tie(dev, ino, rest) == std::tie(o.dev, o.ino, o.rest);
  }
};
std::optional<FileKey> file_key(const std::string& path);  // nullopt: no ancestor can be stat'ed

// Why a file cannot be created in `dir` (it does not exist, is not a directory, is not
// writable: probed by creating and removing a file, as root passes access(W_OK) on read-only
// places), or nullopt when one can.
std::optional<std::string> dir_write_problem(const std::string& dir);

// dir_write_problem() as CliError(2) "<what> '<dir>' <problem>".
void check_writable_dir(const std::string& dir, const std::string& what);

// Writes to a temporary file in the same directory, then links it into place (fails with exit 2
// if the target appeared meanwhile) or, with `force`, renames it over the target. A target
// that cannot be created there is a path error (exit 2); a failed write (disk full, I/O) is 1.
void write_file(const std::string& path, const void* data, size_t size, bool force);
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool force) {
  write_file(path, bytes.data(), bytes.size(), force);
}

}  // namespace vkd::cli
