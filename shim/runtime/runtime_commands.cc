#include "shim/runtime/runtime_commands.h"

#include <chrono>

#include "shim/attribution/stack_capture.h"
#include "shim/control/control_thread.h"
#include "shim/control/fatal_signals.h"
#include "shim/control/log.h"
#include "shim/intercept/internal_failure.h"
#include "shim/oom/cuda_bus_id.h"
#include "shim/oom/frame_labels.h"
#include "shim/python/deep_flush.h"
#include "shim/report/process_info.h"
#include "shim/runtime/device_figures.h"
#include "shim/runtime/runtime.h"

namespace vramshim::runtime {
namespace {

// The stats answer's command line is cut there (the analyzer shows far less).
constexpr size_t kMaxCommandBytes = 4096;

// Taking the GIL may wait for a long Python operation; past this the deep flush gives up.
constexpr std::chrono::seconds kFrameworkFlushTimeout{5};
// The frameworks' own calls may wait for the device's work; past this the control thread answers
// without them (within the CLI's 60 s for a flush).
constexpr std::chrono::seconds kFrameworkRunTimeout{30};

}  // namespace

control::Outcome RuntimeCommands::stats(support::JsonWriter& response) {
  response.key("devices").begin_array();
  for (const pool::DeviceStats& device : runtime_.pools().stats_by_device()) {
    response.begin_object().key("device").number(device.device);
    // What names the GPU in every process, whatever CUDA_VISIBLE_DEVICES makes of the ordinal.
    std::string unknown;
    const std::string bus_id = oom::cuda_pci_bus_id(device.device, &unknown);
    response.key("pci_bus_id");
    if (bus_id.empty()) {
      response.null();
    } else {
      response.string(bus_id);
    }
    for (const auto& [name, value] : device_figure_list(device.stats)) {
      response.key(name).number_or_null(value);
    }
    response.end_object();
  }
  response.end_array();
  write_process(response);
  response.key("out_of_memory").begin_array();
  for (const auto& [device, failures] : runtime_.out_of_memory_counts().by_device()) {
    response.begin_object().key("device").number(device).key("failures").number(failures);
    response.end_object();
  }
  response.end_array();
  return control::Outcome::success();
}

void RuntimeCommands::write_process(support::JsonWriter& response) {
  const report::ProcessInfo process = report::read_process_info(runtime_.rank());
  std::string command;
  for (const std::string& argument : process.cmdline) {
    if (!command.empty()) command += ' ';
    command += argument;
  }
  if (command.size() > kMaxCommandBytes) command.resize(kMaxCommandBytes);
  response.key("process").begin_object();
  response.key("command").string(command);
  response.key("host").string(process.host);
  response.key("rank");
  if (process.rank) {
    response.string(*process.rank);
  } else {
    response.null();
  }
  response.key("job");
  if (runtime_.job()) {
    response.string(*runtime_.job());
  } else {
    response.null();
  }
  response.end_object();
}

control::Outcome RuntimeCommands::sites(std::uint64_t count, support::JsonWriter& response) {
  const attribution::Tracker& tracker = runtime_.tracker();
  const attribution::Tracker::LiveLeaders leaders = tracker.live_leaders(count);
  // The frames of the sites not labelled before, looked up together.
  std::vector<int32_t> unlabelled;
  for (const attribution::SiteFigures& site : leaders.sites) {
    if (!site_labels_.contains(site.stack)) unlabelled.push_back(site.stack);
  }
  const oom::FrameNames names = oom::frame_names_of(tracker.stacks(), unlabelled);
  response.key("sites").begin_array();
  for (const attribution::SiteFigures& site : leaders.sites) {
    response.begin_object();
    response.key("stack").number(site.stack);
    response.key("kind").string(attribution::allocation_kind_name(site.kind));
    response.key("live_bytes").number(site.live_bytes);
    response.key("live_count").number(site.live_count);
    response.key("label").string(site_labels_.label(site.stack, [&] {
      return oom::site_label(tracker.stacks(), runtime_.python(), site.stack, names);
    }));
    response.end_object();
  }
  response.end_array();
  response.key("live_sites").number(static_cast<uint64_t>(leaders.live_sites));
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::flush(control::Trigger, bool deep,
                                        support::JsonWriter& response) {
  if (intercept::internal_failure_seen()) return stopped_after_failure();
  if (deep) flush_frameworks(response);
  if (runtime_.capture().active()) {
    // Waiting here would hold the control thread, and with it a SIGTERM's report, for as long as
    // the capture runs: the flush is made at the first tick after it ended.
    flush_owed_ = true;
    response.key("capture").string(
        "a stream capture is running; the pool is flushed as soon as it ends");
  }
  const pool::FlushResult released = runtime_.pools().flush_all();
  runtime_.trace().record(attribution::EventType::kFlush, -1, 0, released.total(), 0, -1);
  response.key("released_bytes").number(released.total());
  response.key("pool_bytes").number(released.segment_bytes);
  response.key("stream_ordered_bytes").number(released.stream_ordered_bytes);
  return control::Outcome::success();
}

void RuntimeCommands::flush_frameworks(support::JsonWriter& response) {
  if (runtime_.capture().active()) {
    response.key("frameworks_error").string("a stream capture is running; frameworks not flushed");
    return;
  }
  // A framework's cache goes back through the hooks (into the pools): what each step released is
  // the drop in bytes in use while it ran.
  std::vector<uint64_t> in_use_after_step;
  const uint64_t in_use_before = runtime_.tracker().in_use_bytes();
  const python::DeepFlushResult result = python::deep_flush_frameworks(
      runtime_.interpreter(), kFrameworkFlushTimeout, kFrameworkRunTimeout,
      [&](const python::DeepFlushStep&) {
        in_use_after_step.push_back(runtime_.tracker().in_use_bytes());
      },
      runtime_.devices_with_primary_context(),
      // A SIGTERM while the frameworks release (a synchronize of a busy device) or the GIL is
      // taken gets its report now, not after them, past the signal's 5 s.
      &control::ControlThread::serve_crash_report_while_busy);
  if (!result.ok) {
    response.key("frameworks_error").string(result.error);
    return;
  }
  response.key("frameworks").begin_array();
  uint64_t previous = in_use_before;
  for (size_t i = 0; i < result.steps.size(); ++i) {
    const python::DeepFlushStep& step = result.steps[i];
    const uint64_t after = i < in_use_after_step.size() ? in_use_after_step[i] : previous;
    response.begin_object()
        .key("step")
        .string(step.name)
        .key("outcome")
        .string(python::flush_step_outcome_name(step.outcome))
        .key("detail")
        .string(step.detail)
        .key("released_bytes")
        .number(previous > after ? previous - after : 0)
        .end_object();
    previous = after;
  }
  response.end_array();
}

control::Outcome RuntimeCommands::report(control::Trigger trigger, std::string_view path,
                                         support::JsonWriter& response) {
  std::string error;
  const std::string written = runtime_.write_report(
      trigger == control::Trigger::kSignal ? "signal" : "socket", std::string(path), &error);
  if (!error.empty()) return control::Outcome::failure(error);
  response.key("path").string(written);
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::report_crash(const control::FatalSignal& crash,
                                               support::JsonWriter& response) {
  report::CrashDetails details;
  details.signal = crash.signal_number;
  details.signal_name = control::fatal_signal_name(crash.signal_number);
  details.code = crash.code;
  details.address = crash.address;
  details.thread_id = crash.thread_id;
  details.termination = crash.termination;
  details.sender_pid = crash.sender_pid;
  std::string error;
  // A termination's report is the exit report: the process ends without its exit handlers.
  const std::string written =
      runtime_.write_report(crash.termination ? "exit" : "crash", "", &error, nullptr, &details);
  if (!error.empty()) return control::Outcome::failure(error);
  control::log(control::LogLevel::kInfo, "%s report written to %s",
               crash.termination ? details.signal_name.c_str() : "crash", written.c_str());
  response.key("path").string(written);
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::trim(std::uint64_t keep_bytes, support::JsonWriter& response) {
  if (intercept::internal_failure_seen()) return stopped_after_failure();
  if (runtime_.capture().active()) {
    response.key("capture").string("a stream capture is running; nothing was trimmed");
  }
  const uint64_t released = runtime_.pools().trim_all(keep_bytes);
  runtime_.trace().record(attribution::EventType::kTrim, -1, 0, released, 0, -1);
  response.key("released_bytes").number(released);
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::set_limit(std::optional<std::uint64_t> limit_bytes,
                                            support::JsonWriter& response) {
  runtime_.pools().set_limit(limit_bytes);
  response.key("limit_bytes").number_or_null(limit_bytes);
  return control::Outcome::success();
}

void RuntimeCommands::tick() {
  if (attribution::libunwind_pipe_lost()) {
    control::log(control::LogLevel::kWarn,
                 "the program closed a descriptor of libunwind's pipe; stacks are unwound by "
                 "libgcc from now on (slower)");
  }
  if (flush_owed_ && !runtime_.capture().active() && !intercept::internal_failure_seen()) {
    flush_owed_ = false;
    const pool::FlushResult released = runtime_.pools().flush_all();
    runtime_.trace().record(attribution::EventType::kFlush, -1, 0, released.total(), 0, -1);
    control::log(control::LogLevel::kInfo, "flushed %llu bytes once the stream capture ended",
                 static_cast<unsigned long long>(released.total()));
  }
  runtime_.sample_timeline();
  runtime_.sample_history();
  runtime_.oom_monitor().explain_pending();
  if (runtime_.config().idle_release_seconds) {
    runtime_.pools().release_if_idle(std::chrono::steady_clock::now());
  }
  if (runtime_.config().max_cached_bytes) runtime_.pools().enforce_max_cached();
}

control::Outcome RuntimeCommands::stopped_after_failure() {
  return control::Outcome::failure(
      "the pool stopped after an internal failure (see the process's stderr); what it holds stays "
      "held until the process ends");
}

}  // namespace vramshim::runtime
