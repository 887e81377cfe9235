#include "runtime/vk/CopyWorkers.h"

#include <algorithm>
#include <cstring>
#include <system_error>

namespace vkd {

CopyWorkers::CopyWorkers(unsigned threads) {
  for (unsigned i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { work_loop(); });
    } catch (const std::system_error&) {
      break;  // the system refused a thread: the ones that started (or the caller) copy it all
    }
  }
}

CopyWorkers::~CopyWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void CopyWorkers::copy(void* dst, const void* src, size_t bytes) {
  if (workers_.empty() || bytes < kMinParallelBytes) {
    std::memcpy(dst, src, bytes);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dst_ = static_cast<char*>(dst);
    src_ = static_cast<const char*>(src);
    bytes_ = bytes;
    chunks_ = (bytes + kChunkBytes - 1) / kChunkBytes;
    next_chunk_.store(0, std::memory_order_relaxed);
    open_ = true;
    ++job_;
  }
  wake_.notify_all();
  copy_chunks();
  {
    // Closed: a helper that wakes from now on goes back to sleep without touching the job.
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
  }
  // Helpers still inside finish their last chunk (at most kChunkBytes each): a short wait, so
  // polled rather than slept on.
  while (active_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void CopyWorkers::copy_chunks() {
  for (size_t c = next_chunk_.fetch_add(1, std::memory_order_relaxed); c < chunks_;
       c = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
    const size_t offset = c * kChunkBytes;
    std::memcpy(dst_ + offset, src_ + offset, std::min(kChunkBytes, bytes_ - offset));
  }
}

void CopyWorkers::work_loop() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (open_ && job_ != seen); });
    if (stop_) return;
    seen = job_;
    // Counted while the mutex is held, so the caller, which closes the job under the same
    // mutex before it waits for active_ to reach 0, cannot miss this helper.
    active_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    copy_chunks();
    active_.fetch_sub(1, std::memory_order_release);
    lock.lock();
  }
}

}  // namespace vkd
