// The control thread's commands (socket requests and signals), carried out on the runtime.
#pragma once

#include "shim/control/command_handler.h"
#include "shim/runtime/site_label_cache.h"

namespace vramshim::runtime {

class Runtime;

class RuntimeCommands final : public control::CommandHandler {
 public:
  explicit RuntimeCommands(Runtime& runtime) : runtime_(runtime) {}

  control::Outcome stats(support::JsonWriter& response) override;
  control::Outcome sites(std::uint64_t count, support::JsonWriter& response) override;
  control::Outcome flush(control::Trigger trigger, bool deep,
                         support::JsonWriter& response) override;
  control::Outcome report(control::Trigger trigger, std::string_view path,
                          support::JsonWriter& response) override;
  control::Outcome report_crash(const control::FatalSignal& crash,
                                support::JsonWriter& response) override;
  control::Outcome trim(std::uint64_t keep_bytes, support::JsonWriter& response) override;
  control::Outcome set_limit(std::optional<std::uint64_t> limit_bytes,
                             support::JsonWriter& response) override;
  void tick() override;

 private:
  // "process": who this process is (command, host, rank, job).
  void write_process(support::JsonWriter& response);
  // Asks the Python frameworks to empty their caches ("frameworks", or "frameworks_error").
  void flush_frameworks(support::JsonWriter& response);
  // The answer to a flush or a trim once an internal failure stopped the pools.
  static control::Outcome stopped_after_failure();

  Runtime& runtime_;
  // A flush was asked for while a stream capture ran: the tick makes it once none runs. The
  // control thread's, as every command and tick is.
  bool flush_owed_ = false;
  SiteLabelCache site_labels_;  // the control thread's
};

}  // namespace vramshim::runtime
