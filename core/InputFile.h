// Reading an input file safely, for everything that reads one (the vkd commands, vkd::Model).
//
// Only a regular file is read (symlinks followed unless the caller refuses them): a device,
// FIFO or socket would make a read that never ends or blocks (/dev/zero, a pipe), so it is
// refused; and no read goes past a cap (whole files) or past what the caller asks for (the .npy
// reader stops where its header says). POSIX only; no Vulkan.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vkd {

// Why an input file cannot be read; what() is the reason alone ("no such file", "it is a
// character device, not a regular file", ...), the caller adds which file it is.
class InputFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "a directory", "a character device", "a FIFO (named pipe)", ... for a stat() mode that is
// not a regular file's.
std::string file_type_name(mode_t mode);

// Whether the file a path names may be reached through a symbolic link (its last component;
// Refuse: "it is a symbolic link", checked with lstat() and opened with O_NOFOLLOW). A partition
// plan's blobs refuse them: they must be files of the plan's own directory.
enum class Symlinks { Follow, Refuse };

// A regular file opened for reading. Opened without blocking (a FIFO would wait for a writer)
// and checked on the open descriptor, so what is read is what was checked.
class InputFile {
 public:
  // InputFileError when it is not readable.
  explicit InputFile(const std::string& path, Symlinks symlinks = Symlinks::Follow);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }  // when it was opened
  // The next `n` bytes; fewer only at the end of the file. InputFileError on a read error.
  std::vector<uint8_t> read(uint64_t n);
  // The same, appended to `out`.
  void read_into(std::vector<uint8_t>& out, uint64_t n);

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Caps on the files read whole (larger ones are refused before anything is read).
inline constexpr uint64_t kMaxModelFileBytes = 16ull << 30;    // a .vkd blob
inline constexpr uint64_t kMaxWeightsFileBytes = 64ull << 30;  // a .safetensors file
inline constexpr uint64_t kMaxGraphFileBytes = 256ull << 20;   // a graph IR or plan .json file

// What a reader of a file of one kind asks of it besides being a regular file under the cap.
struct InputFileRules {
  Symlinks symlinks = Symlinks::Follow;
  // When not empty, the file must start with these bytes ("VKDB"), checked before the rest is
  // read, else "it is not <kind>": a file of another kind is neither read whole nor quoted.
  std::string_view magic;
  std::string kind;  // "a vkdelegate blob"
};

// The whole of the regular file `path`, at most `max_bytes`; else Error(InvalidArgument)
// "cannot read <what> '<path>': <reason>".
std::vector<uint8_t> read_input_file(const std::string& path, const std::string& what,
                                     uint64_t max_bytes, const InputFileRules& rules = {});

}  // namespace vkd
