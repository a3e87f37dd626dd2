#include "tests/control/fake_handler.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace vramshim::testing {

std::optional<std::uint64_t> FakeHandler::limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_;
}

void FakeHandler::set_report_pattern(std::string pattern) {
  std::lock_guard<std::mutex> lock(mutex_);
  report_pattern_ = std::move(pattern);
}

control::Outcome FakeHandler::stats(support::JsonWriter& response) {
  ++stats_calls;
  if (const int delay = stats_delay_ms)
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
  if (const std::size_t padding = stats_padding_bytes) {
    response.key("padding").string(std::string(padding, 'x'));
  }
  const std::optional<std::uint64_t> cap = limit();
  const std::uint64_t in_use = in_use_bytes, cached = cached_bytes;
  response.key("devices").begin_array().begin_object();
  response.key("device").number(0);
  response.key("in_use_bytes").number(in_use);
  response.key("cached_bytes").number(cached);
  response.key("reserved_bytes").number(in_use + cached);
  response.key("peak_in_use_bytes").number(peak_in_use_bytes);
  response.key("driver_alloc_calls").number(7);
  response.key("pool_hits").number(1000);
  response.key("limit_bytes").number_or_null(cap);
  response.end_object().end_array();
  const char* rank = std::getenv("RANK");
  const char* job = std::getenv("SLURM_JOB_ID");
  response.key("process").begin_object();
  response.key("command").string("fake_shimmed_process --pretend");
  response.key("host").string("fakehost");
  response.key("rank");
  rank != nullptr ? response.string(rank) : response.null();
  response.key("job");
  job != nullptr ? response.string(job) : response.null();
  response.end_object();
  response.key("out_of_memory").begin_array();
  response.begin_object().key("device").number(0).key("failures").number(2).end_object();
  response.end_array();
  return control::Outcome::success();
}

control::Outcome FakeHandler::sites(std::uint64_t count, support::JsonWriter& response) {
  struct Site {
    int stack;
    std::uint64_t live_bytes;
    const char* label;
  };
  // Two stacks end in the same user frame.
  static constexpr Site kSites[] = {{4, 2 << 20, "train.py:57 forward"},
                                    {9, 1 << 20, "train.py:57 forward"},
                                    {2, 512 << 10, "load \"weights\"\\n"}};
  response.key("sites").begin_array();
  for (std::uint64_t i = 0; i < count && i < std::size(kSites); ++i) {
    response.begin_object();
    response.key("stack").number(kSites[i].stack);
    response.key("kind").string("device");
    response.key("live_bytes").number(kSites[i].live_bytes);
    response.key("live_count").number(1);
    response.key("label").string(kSites[i].label);
    response.end_object();
  }
  response.end_array();
  response.key("live_sites").number(static_cast<std::uint64_t>(std::size(kSites)));
  return control::Outcome::success();
}

control::Outcome FakeHandler::flush(control::Trigger trigger, bool deep,
                                    support::JsonWriter& response) {
  ++(trigger == control::Trigger::kSignal ? flushes_by_signal : flushes_by_socket);
  if (deep) ++deep_flushes;
  response.key("released_bytes").number(cached_bytes.exchange(0));
  return control::Outcome::success();
}

control::Outcome FakeHandler::report(control::Trigger trigger, std::string_view path,
                                     support::JsonWriter& response) {
  std::string target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    target = path.empty() ? report_pattern_ : std::string(path);
  }
  std::ofstream file(target);
  file << R"({"format":"vramshim-report","version":1,"reason":")"
       << (trigger == control::Trigger::kSignal ? "signal" : "socket") << R"(","process":{"pid":)"
       << ::getpid() << "}}\n";
  file.close();
  // Counted once written: a test that sees the count reads the file.
  if (trigger == control::Trigger::kSignal) ++reports_by_signal;
  if (!file) return control::Outcome::failure("cannot write " + target);
  response.key("path").string(target);
  return control::Outcome::success();
}

control::Outcome FakeHandler::report_crash(const control::FatalSignal& crash,
                                           support::JsonWriter& response) {
  const std::lock_guard<std::mutex> held(report_lock);
  ++crash_reports;
  std::string target;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    target = report_pattern_;
  }
  std::ofstream file(target);
  file << R"({"reason":"crash","signal":)" << crash.signal_number << R"(,"code":)" << crash.code
       << R"(,"address":)" << (crash.address ? std::to_string(*crash.address) : "null")
       << R"(,"thread_id":)" << crash.thread_id << "}\n";
  if (!file) return control::Outcome::failure("cannot write " + target);
  response.key("path").string(target);
  return control::Outcome::success();
}

control::Outcome FakeHandler::trim(std::uint64_t keep_bytes, support::JsonWriter& response) {
  std::uint64_t cached = cached_bytes;
  const std::uint64_t released = cached > keep_bytes ? cached - keep_bytes : 0;
  cached_bytes -= released;
  response.key("released_bytes").number(released);
  return control::Outcome::success();
}

control::Outcome FakeHandler::set_limit(std::optional<std::uint64_t> limit_bytes,
                                        support::JsonWriter& response) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = limit_bytes;
  response.key("limit_bytes").number_or_null(limit_);
  return control::Outcome::success();
}

}  // namespace vramshim::testing
