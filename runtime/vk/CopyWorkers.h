// CopyWorkers: a few parked threads that share one large host memcpy with the calling thread.
// For an execute's input and output copies between the caller's arrays and mapped staging
// memory: one thread reads or writes memory that the GPU wrote (or will read) at 10-15 GB/s,
// so a 1 MB float output costs ~80 us of host wall on a discrete GPU, more than the model's
// GPU time; several threads move it in a fraction of that. The threads live as long as the
// object (started once: starting threads per copy costs as much as the copy).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace vkd {

class CopyWorkers {
 public:
  // A copy shorter than this runs on the calling thread alone: waking a parked thread costs
  // several microseconds, about what a thread copies of such a block meanwhile.
  static constexpr size_t kMinParallelBytes = 256 * 1024;
  // The unit the threads claim one after the other: small enough that a thread that wakes
  // late still finds work, large enough that claiming costs nothing next to the copy.
  static constexpr size_t kChunkBytes = 64 * 1024;

  // `threads` counts the calling thread: 1 (or 0) starts none and every copy is a memcpy.
  explicit CopyWorkers(unsigned threads);
  ~CopyWorkers();
  CopyWorkers(const CopyWorkers&) = delete;
  CopyWorkers& operator=(const CopyWorkers&) = delete;

  // memcpy(dst, src, bytes) (the ranges must not overlap), split into kChunkBytes pieces that
  // the calling thread and the parked ones claim in turn; returns when every byte is copied.
  // Not reentrant: one copy at a time per object (a delegate's execute is serialized).
  void copy(void* dst, const void* src, size_t bytes);
  // Threads a copy may use, the calling one included.
  unsigned threads() const { return static_cast<unsigned>(workers_.size()) + 1; }

 private:
  void work_loop();
  void copy_chunks();  // claims chunks of the open job until none is left

  std::mutex mutex_;
  std::condition_variable wake_;
  // Guarded by mutex_: the job number, whether it still takes helpers, shutdown.
  uint64_t job_ = 0;
  bool open_ = false;
  bool stop_ = false;
  // Helpers inside copy_chunks(); the caller returns only once it is 0, so the job's fields
  // below never change under a helper.
  std::atomic<unsigned> active_{0};
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  size_t bytes_ = 0;
  size_t chunks_ = 0;
  std::atomic<size_t> next_chunk_{0};
  std::vector<std::thread> workers_;
};

}  // namespace vkd
