// Explains out-of-memory failures (docs/design.md, "Out of memory, explained"): the failing call
// gathers the facts of that moment (a few milliseconds at most, taking only locks other threads
// hold for a few instructions); a helper thread the control thread starts then asks about other
// processes, prints one block on stderr and writes the "oom" report. The first failure is
// explained, then at most one per 10 s, each block saying how many failures it stands for; only the
// first writes a report.
#pragma once

// First, so that <cuda.h> declares the legacy names the hooks need (see cuda_api.h).
#include "shim/intercept/cuda_api.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "shim/attribution/tracker.h"
#include "shim/oom/out_of_memory_facts.h"
#include "shim/pool/pool_registry.h"
#include "shim/python/python_stacks.h"

namespace vramshim::runtime {

class OutOfMemoryMonitor {
 public:
  // Writes the "oom" report for `facts`; returns its path, or "" with *error set.
  using ReportWriter = std::function<std::string(const oom::OutOfMemoryFacts&, std::string*)>;

  // `socket_directories`: where the other shims of this user have their control sockets, asked
  // about their share of the device when a failure is explained.
  OutOfMemoryMonitor(pool::PoolRegistry& pools, attribution::Tracker& tracker,
                     const python::PythonStacks* python,
                     std::vector<std::string> socket_directories, ReportWriter write_report);

  // Called by the call that returns CUDA_ERROR_OUT_OF_MEMORY to the program, on its thread, with
  // the calling thread's context current.
  void on_failure(const oom::FailedRequest& request) noexcept;

  // Called by the control thread: explains the failure gathered since, if any, after asking the
  // other processes on the device (at most ~300 ms, oom/other_processes.h), on a helper thread, and
  // returns at once: meanwhile the control thread answers the `stats` of the other processes
  // failing with this one, which their explanations ask for.
  void explain_pending() noexcept;
  // At exit: waits (kExitWait at most) for a failure being gathered or explained, explains what is
  // pending, and says in one line how many failures came after the last explanation.
  void explain_at_exit() noexcept;

 private:
  oom::OutOfMemoryFacts gather(const oom::FailedRequest& request);
  // The pending facts, if any, with explaining_ set; finish_explaining() must follow.
  std::optional<oom::OutOfMemoryFacts> take_pending();
  // Asks about the other processes, prints the block and writes the first report.
  void explain(oom::OutOfMemoryFacts& facts) noexcept;
  void finish_explaining();

  static constexpr std::chrono::seconds kQuietPeriod{10};
  // How long the exit waits for an explanation under way (asking the other processes takes at
  // most ~300 ms, writing the report the rest).
  static constexpr std::chrono::seconds kExitWait{2};

  pool::PoolRegistry& pools_;
  attribution::Tracker& tracker_;
  const python::PythonStacks* const python_;
  const std::vector<std::string> socket_directories_;
  const ReportWriter write_report_;

  std::mutex mutex_;  // held for a few instructions only, never while gathering or explaining
  bool gathering_ = false;
  std::optional<oom::OutOfMemoryFacts> pending_;
  // From taking the pending facts until the block is written: the quiet period starts only then,
  // and a failure meanwhile is counted, not gathered.
  bool explaining_ = false;
  std::condition_variable settled_;    // notified when gathering_ or explaining_ turns false
  uint64_t unexplained_failures_ = 0;  // since the last explanation, the pending one excluded
  std::optional<std::chrono::steady_clock::time_point> last_explained_;
  std::string first_report_;  // the report of the first failure, once written
};

}  // namespace vramshim::runtime
