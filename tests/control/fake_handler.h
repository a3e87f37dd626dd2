// A CommandHandler for tests: a pretend pool of one device whose figures the commands change.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "shim/control/command_handler.h"

namespace vramshim::testing {

class FakeHandler : public control::CommandHandler {
 public:
  // Figures of the pretend device.
  std::atomic<std::uint64_t> in_use_bytes{3 << 20};
  std::atomic<std::uint64_t> cached_bytes{64 << 20};
  std::atomic<std::uint64_t> peak_in_use_bytes{5 << 20};

  // Calls seen, by command.
  std::atomic<int> stats_calls{0};
  std::atomic<int> flushes_by_signal{0};
  std::atomic<int> flushes_by_socket{0};
  std::atomic<int> deep_flushes{0};
  std::atomic<int> reports_by_signal{0};
  std::atomic<int> crash_reports{0};
  std::atomic<int> ticks{0};
  // Bytes of a "padding" string added to the stats answer: an answer a client can be slow to read.
  std::atomic<std::size_t> stats_padding_bytes{0};
  // How long the stats answer takes to build: a slow command (a deep flush, many sites).
  std::atomic<int> stats_delay_ms{0};

  // Taken by report_crash, as the shim's report takes the pool's locks.
  std::mutex report_lock;

  std::optional<std::uint64_t> limit() const;
  // Where a report request without a path, and a crash report, write.
  void set_report_pattern(std::string pattern);

  // Also "process" (command "fake_shimmed_process --pretend", host "fakehost", rank from RANK and
  // job from SLURM_JOB_ID) and two out-of-memory failures on device 0.
  control::Outcome stats(support::JsonWriter& response) override;
  // Three made-up sites, two of them named by the same frame.
  control::Outcome sites(std::uint64_t count, support::JsonWriter& response) override;
  control::Outcome flush(control::Trigger trigger, bool deep,
                         support::JsonWriter& response) override;
  control::Outcome report(control::Trigger trigger, std::string_view path,
                          support::JsonWriter& response) override;
  // Writes {"reason":"crash","signal":N,"code":N,"address":N or null,"thread_id":N}.
  control::Outcome report_crash(const control::FatalSignal& crash,
                                support::JsonWriter& response) override;
  control::Outcome trim(std::uint64_t keep_bytes, support::JsonWriter& response) override;
  control::Outcome set_limit(std::optional<std::uint64_t> limit_bytes,
                             support::JsonWriter& response) override;
  void tick() override { ++ticks; }

 private:
  mutable std::mutex mutex_;
  std::optional<std::uint64_t> limit_;
  std::string report_pattern_ = "fake-report.json";
};

}  // namespace vramshim::testing
