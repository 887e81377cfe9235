#include "tools/vkd/Files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/Error.h"
#include "tools/vkd/Args.h"

namespace vkd::cli {

namespace fs = std::filesystem;

namespace {

std::string unique_suffix() { return std::to_string(static_cast<long>(::getpid())); }

// Errors of creating or renaming a file in the target's directory that the user fixes by
// choosing another place (exit 2); anything else (disk full, I/O) is a failure (exit 1).
bool is_path_error(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case EACCES:
    case EPERM:
    case EROFS:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP:
    case EEXIST:
    case EXDEV: return true;
    default: return false;
  }
}

// The absolute, lexically normal form of `path` (no trailing separator).
fs::path normal_absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (p.has_relative_path() && p.filename().empty()) p = p.parent_path();
  return p;
}

}  // namespace

std::vector<uint8_t> read_input_file(const std::string& path, const std::string& what,
                                     uint64_t max_bytes) {
  try {
    return vkd::read_input_file(path, what, max_bytes);
  } catch (const Error& e) {
    throw CliError(2, e.what());
  }
}

std::optional<FileKey> file_key(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) return FileKey{st.st_dev, st.st_ino, ""};
  // Not there (yet): the nearest existing ancestor and the rest of the path.
  fs::path p = normal_absolute(path);
  std::string rest = p.filename().string();
  for (fs::path dir = p.parent_path();; dir = dir.parent_path()) {
    if (::stat(dir.c_str(), &st) == 0) return FileKey{st.st_dev, st.st_ino, rest};
    if (dir == dir.parent_path()) return std::nullopt;
    rest = dir.filename().string() + "/" + rest;
  }
}

// Creates (and removes) a probe file: the only reliable test, as root passes access(W_OK) on
// read-only places.
std::optional<std::string> dir_write_problem(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) return std::string("does not exist");
  if (!fs::is_directory(st)) return std::string("is not a directory");
  const std::string probe = (fs::path(dir) / (".vkd-write-test-" + unique_suffix())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return "is not writable: " + std::string(std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return std::nullopt;
}

void check_writable_dir(const std::string& dir, const std::string& what) {
  if (const auto problem = dir_write_problem(dir)) {
    throw CliError(2, what + " '" + dir + "' " + *problem);
  }
}

void FilePlan::add_input(const std::string& role, const std::string& path) {
  inputs_.push_back({role, path});
}

void FilePlan::add_output(const std::string& what, const std::string& label,
                          const std::string& path) {
  outputs_.push_back({what, label, path});
}

void FilePlan::add_new_directory(const std::string& dir) { new_dirs_.push_back(dir); }

void FilePlan::check(bool force) const {
  std::vector<std::string> errors;
  std::vector<std::pair<FileKey, const Input*>> input_keys;
  for (const Input& in : inputs_) {
    const auto key = file_key(in.path);
    if (key && key->rest.empty()) input_keys.emplace_back(*key, &in);
  }
  std::vector<fs::path> new_dirs;
  for (const std::string& d : new_dirs_) new_dirs.push_back(normal_absolute(d));
  std::map<fs::path, std::optional<std::string>> dir_problems;  // each directory probed once
  std::vector<std::pair<FileKey, const Output*>> output_keys;

  for (const Output& out : outputs_) {
    const fs::path parent = fs::path(out.path).parent_path();
    const std::string dir = parent.empty() ? "." : parent.string();
    const fs::path dir_key = normal_absolute(dir);
    if (std::find(new_dirs.begin(), new_dirs.end(), dir_key) == new_dirs.end()) {
      auto it = dir_problems.find(dir_key);
      if (it == dir_problems.end())
        it = dir_problems.emplace(dir_key, dir_write_problem(dir)).first;
      if (it->second) {
        errors.push_back(out.what + ": cannot write '" + out.path + "': directory '" + dir + "' " +
                         *it->second);
        continue;
      }
    }

    bool clash = false;
    if (const auto key = file_key(out.path)) {
      for (const auto& [k, in] : input_keys) {
        if (!(k == *key)) continue;
        errors.push_back(out.label + " is " + in->role +
                         (in->path == out.path ? "" : " ('" + in->path + "')") +
                         "; refusing to overwrite a file this command reads");
        clash = true;
        break;
      }
      for (const auto& [k, other] : output_keys) {
        if (clash || !(k == *key)) continue;
        errors.push_back(out.label + " and " + other->label +
                         " are the same file; each output needs its own");
        clash = true;
      }
      output_keys.emplace_back(*key, &out);
    }
    if (clash) continue;

    struct stat st{};
    if (::lstat(out.path.c_str(), &st) != 0) continue;  // not there: fine
    if (S_ISDIR(st.st_mode)) {
      errors.push_back(out.what + ": '" + out.path + "' is a directory");
    } else if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      errors.push_back(out.what + ": '" + out.path + "' is " + file_type_name(st.st_mode) +
                       ", not a regular file; refusing to replace it");
    } else if (!force) {
      errors.push_back(out.what + ": '" + out.path +
                       "' already exists (pass --force to overwrite)");
    }
  }
  if (errors.empty()) return;
  std::string message;
  for (const auto& e : errors) message += (message.empty() ? "" : "\n") + e;
  throw CliError(2, message);
}

void write_file(const std::string& path, const void* data, size_t size, bool force) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const std::string tmp = path + ".vkd-tmp-" + unique_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw CliError(is_path_error(err) ? 2 : 1,
                   "cannot create '" + tmp + "': " + std::strerror(err));
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw CliError(1, "cannot write '" + path + "': " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw CliError(1, "cannot write '" + path + "': " + err);
  }
  int rc = 0;
  if (force) {
    rc = ::rename(tmp.c_str(), path.c_str());
  } else {
    rc = ::link(tmp.c_str(), path.c_str());
    if (rc != 0 && errno != EEXIST) {
      // A filesystem without hard links: check, then rename.
      std::error_code ec;
      if (fs::exists(fs::symlink_status(path, ec))) {
        errno = EEXIST;
      } else {
        rc = ::rename(tmp.c_str(), path.c_str());
      }
    }
  }
  const int saved = errno;
  ::unlink(tmp.c_str());  // after link(), or a leftover after a failure
  if (rc != 0) {
    throw CliError(is_path_error(saved) ? 2 : 1,
                   "cannot write '" + path + "': " +
                       (saved == EEXIST ? std::string("it appeared while running (use --force)")
                                        : std::string(std::strerror(saved))));
  }
}

}  // namespace vkd::cli
