// parallel_for: a few independent tasks on a few threads, errors back on the caller's thread.
// For host work that a driver does in parallel for independent objects (creating the pipelines
// of a graph, PipelineCache::get_all); not a general thread pool.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace vkd {

namespace detail {
// Joins every thread it holds when it goes out of scope, on every path: a joinable
// std::thread destroyed would call std::terminate.
struct JoinAll {
  std::vector<std::thread> threads;
  JoinAll() = default;
  JoinAll(const JoinAll&) = delete;
  JoinAll& operator=(const JoinAll&) = delete;
  ~JoinAll() {
    for (auto& t : threads) t.join();
  }
};
}  // namespace detail

// Runs task(i) for every i in [0, count) on up to `threads` threads, the calling thread being
// one of them, and returns when every task has finished. Every task runs, also after another
// threw (the tasks are independent: what they made stays valid); then the exception of the
// lowest index that threw is rethrown on the calling thread, the same one whatever the
// scheduling. A thread the system refuses to start leaves its share to those that started.
template <typename Task>
void parallel_for(size_t count, unsigned threads, const Task& task) {
  std::vector<std::exception_ptr> errors(count);  // slot i written only by the runner of task i
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  {
    detail::JoinAll helpers;  // declared after what `work` uses: joined before it goes
    const size_t extra = std::min<size_t>(std::max(threads, 1u), count) - (count > 0 ? 1 : 0);
    for (size_t t = 0; t < extra; ++t) {
      try {
        helpers.threads.emplace_back(work);
      } catch (const std::system_error&) {
        break;
      }
    }
    work();
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace vkd
