// libFuzzer target: any bytes as a request line must parse without a crash, and the response built
// for it must be one valid JSON object with "ok".
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "shim/control/dispatch.h"

namespace {

// Answers every command without side effects.
class InertHandler : public vramshim::control::CommandHandler {
 public:
  using Outcome = vramshim::control::Outcome;
  using JsonWriter = vramshim::support::JsonWriter;
  Outcome stats(JsonWriter& out) override {
    out.key("devices").begin_array().end_array();
    return Outcome::success();
  }
  Outcome sites(std::uint64_t count, JsonWriter& out) override {
    out.key("sites").begin_array();
    for (std::uint64_t i = 0; i < count; ++i) out.number(i);
    out.end_array();
    return Outcome::success();
  }
  Outcome flush(vramshim::control::Trigger, bool, JsonWriter& out) override {
    out.key("released_bytes").number(0);
    return Outcome::success();
  }
  Outcome report(vramshim::control::Trigger, std::string_view path, JsonWriter& out) override {
    // Echoing the path exercises the escaping of client bytes; a failure path echoes it too.
    if (path.size() % 2 == 0) return Outcome::failure("cannot write " + std::string(path));
    out.key("path").string(path);
    return Outcome::success();
  }
  Outcome report_crash(const vramshim::control::FatalSignal&, JsonWriter& out) override {
    out.key("path").string("crash.json");
    return Outcome::success();
  }
  Outcome trim(std::uint64_t keep, JsonWriter& out) override {
    out.key("released_bytes").number(keep);
    return Outcome::success();
  }
  Outcome set_limit(std::optional<std::uint64_t> limit, JsonWriter& out) override {
    out.key("limit_bytes").number_or_null(limit);
    return Outcome::success();
  }
  void tick() override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static InertHandler handler;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const std::string response = vramshim::control::respond_to(line, handler);
  const nlohmann::json parsed = nlohmann::json::parse(response, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object() || !parsed.contains("ok")) std::abort();
  return 0;
}
