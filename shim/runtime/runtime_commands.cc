#include "shim/runtime/runtime_commands.h"

#include <chrono>

#include "shim/control/json_writer.h"
#include "shim/runtime/device_figures.h"
#include "shim/runtime/runtime.h"

namespace vramshim::runtime {
namespace {

void write_optional(control::JsonWriter& json, const std::optional<uint64_t>& value) {
  if (value) {
    json.unsigned_number(*value);
  } else {
    json.null();
  }
}

}  // namespace

control::Outcome RuntimeCommands::stats(control::JsonWriter& response) {
  response.key("devices").begin_array();
  for (const pool::DeviceStats& device : runtime_.pools().stats_by_device()) {
    response.begin_object().key("device").signed_number(device.device);
    for (const auto& [name, value] : device_figure_list(device.stats)) {
      write_optional(response.key(name), value);
    }
    response.end_object();
  }
  response.end_array();
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::flush(control::Trigger, control::JsonWriter& response) {
  const pool::FlushResult released = runtime_.pools().flush_all();
  response.key("released_bytes").unsigned_number(released.total());
  response.key("pool_bytes").unsigned_number(released.segment_bytes);
  response.key("stream_ordered_bytes").unsigned_number(released.stream_ordered_bytes);
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::report(control::Trigger trigger, std::string_view path,
                                         control::JsonWriter& response) {
  std::string error;
  const std::string written = runtime_.write_report(
      trigger == control::Trigger::kSignal ? "signal" : "socket", std::string(path), &error);
  if (!error.empty()) return control::Outcome::failure(error);
  response.key("path").string(written);
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::trim(std::uint64_t keep_bytes, control::JsonWriter& response) {
  response.key("released_bytes").unsigned_number(runtime_.pools().trim_all(keep_bytes));
  return control::Outcome::success();
}

control::Outcome RuntimeCommands::set_limit(std::optional<std::uint64_t> limit_bytes,
                                            control::JsonWriter& response) {
  runtime_.pools().set_limit(limit_bytes);
  write_optional(response.key("limit_bytes"), limit_bytes);
  return control::Outcome::success();
}

void RuntimeCommands::tick() {
  runtime_.sample_timeline();
  if (runtime_.config().idle_release_seconds) {
    runtime_.pools().release_if_idle(std::chrono::steady_clock::now());
  }
}

}  // namespace vramshim::runtime
