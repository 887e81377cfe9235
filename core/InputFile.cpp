#include "core/InputFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/Error.h"

namespace vkd {

std::string file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

namespace {

std::string not_regular(mode_t mode) {
  return S_ISDIR(mode) ? "it is a directory"
                       : "it is " + file_type_name(mode) + ", not a regular file";
}

}  // namespace

InputFile::InputFile(const std::string& path, Symlinks symlinks) {
  // stat() first, so that a device is never opened (opening one can have effects); the open
  // descriptor is checked again below.
  const bool follow = symlinks == Symlinks::Follow;
  struct stat st{};
  if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
    const int err = errno;
    throw InputFileError(err == ENOENT ? "no such file" : std::strerror(err));
  }
  if (S_ISLNK(st.st_mode)) throw InputFileError("it is a symbolic link");
  if (!S_ISREG(st.st_mode)) throw InputFileError(not_regular(st.st_mode));
  const int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
  fd_ = ::open(path.c_str(), flags);
  if (fd_ < 0) {
    // ELOOP: replaced by a link between lstat() and open().
    throw InputFileError(errno == ELOOP ? "it is a symbolic link" : std::strerror(errno));
  }
  std::string why;
  if (::fstat(fd_, &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = not_regular(st.st_mode);  // replaced between stat() and open()
  }
  if (!why.empty()) {
    ::close(fd_);
    throw InputFileError(why);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<uint8_t> InputFile::read(uint64_t n) {
  std::vector<uint8_t> out;
  read_into(out, n);
  return out;
}

void InputFile::read_into(std::vector<uint8_t>& out, uint64_t n) {
  constexpr uint64_t kChunk = uint64_t{1} << 24;
  const size_t start = out.size();
  out.reserve(start + static_cast<size_t>(std::min(n, size_)));
  while (out.size() - start < n) {
    const size_t old = out.size();
    const size_t chunk = static_cast<size_t>(std::min(n - (old - start), kChunk));
    out.resize(old + chunk);
    const ssize_t got = ::read(fd_, out.data() + old, chunk);
    if (got < 0) {
      out.resize(old);
      if (errno == EINTR) continue;
      throw InputFileError(std::string("read error: ") + std::strerror(errno));
    }
    out.resize(old + static_cast<size_t>(got));
    if (got == 0) break;
  }
}

std::vector<uint8_t> read_input_file(const std::string& path, const std::string& what,
                                     uint64_t max_bytes, const InputFileRules& rules) {
  const std::string where = "cannot read " + what + " '" + path + "': ";
  try {
    InputFile file(path, rules.symlinks);
    if (file.size() > max_bytes) {
      const std::string cap = max_bytes >= (1u << 20) && max_bytes % (1u << 20) == 0
                                  ? std::to_string(max_bytes >> 20) + " MiB"
                                  : std::to_string(max_bytes) + " bytes";
      VKD_THROW(ErrorCode::InvalidArgument, where, "it is ", file.size(), " bytes, more than the ",
                cap, " a ", what, " may have");
    }
    std::vector<uint8_t> bytes = file.read(rules.magic.size());
    VKD_CHECK(std::equal(bytes.begin(), bytes.end(), rules.magic.begin(), rules.magic.end(),
                         [](uint8_t b, char m) { return b == static_cast<uint8_t>(m); }),
              ErrorCode::InvalidArgument, where, "it is not ", rules.kind);
    file.read_into(bytes, file.size() - bytes.size());
    return bytes;
  } catch (const InputFileError& e) {
    VKD_THROW(ErrorCode::InvalidArgument, where, e.what());
  }
}

}  // namespace vkd
