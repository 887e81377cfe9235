#include "tools/vkd/Files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "tools/vkd/Args.h"

namespace vkd::cli {

namespace fs = std::filesystem;

namespace {

std::string unique_suffix() { return std::to_string(static_cast<long>(::getpid())); }

}  // namespace

// Creates (and removes) a probe file: the only reliable test, as root passes access(W_OK) on
// read-only places.
void check_writable_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) throw CliError(2, what + " '" + dir + "' does not exist");
  if (!fs::is_directory(st)) throw CliError(2, what + " '" + dir + "' is not a directory");
  const std::string probe = (fs::path(dir) / (".vkd-write-test-" + unique_suffix())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    throw CliError(2, what + " '" + dir + "' is not writable: " + std::strerror(errno));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// `path` may be written: an existing file only with --force, never a directory.
void check_target_file(const std::string& path, bool force, const std::string& what,
                       std::vector<std::string>& errors) {
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    errors.push_back(what + ": cannot write '" + path + "': directory '" + parent.string() +
                     "' does not exist");
    return;
  }
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return;
  if (fs::is_directory(st)) {
    errors.push_back(what + ": '" + path + "' is a directory");
  } else if (!force) {
    errors.push_back(what + ": '" + path + "' already exists (pass --force to overwrite)");
  }
}

// Writes to a temporary file in the same directory, then links it into place (fails if the
// target appeared meanwhile) or, with `force`, renames it over the target.
void write_file(const std::string& path, const void* data, size_t size, bool force) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  const std::string tmp = path + ".vkd-tmp-" + unique_suffix();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    // A missing or read-only directory is the caller's to fix (exit 2).
    const bool user_error = errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == EROFS;
    throw CliError(user_error ? 2 : 1, "cannot create '" + tmp + "': " + std::strerror(errno));
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
    throw CliError(saved == EEXIST ? 2 : 1,
                   "cannot write '" + path + "': " +
                       (saved == EEXIST ? std::string("it appeared while running (use --force)")
                                        : std::string(std::strerror(saved))));
  }
}

}  // namespace vkd::cli
