// What the control thread asks of the shim's runtime: the commands behind the socket and the
// signals.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "shim/support/json_writer.h"

namespace vramshim::control {

// Who asked for a flush or a report; the runtime turns it into the report's "reason".
enum class Trigger { kSignal, kSocket };

// A signal that is ending the process (fatal_signals.h), as its report names it.
struct FatalSignal {
  int signal_number = 0;
  int code = 0;                          // si_code
  std::optional<std::uint64_t> address;  // si_addr of a fault; none for a sent signal (kill, abort)
  int thread_id = 0;                     // the thread it struck
  // SIGTERM or SIGHUP: the process is being stopped, not crashing; its report is the exit report.
  bool termination = false;
  std::optional<int> sender_pid;  // si_pid of a signal sent by a process (kill, sigqueue)
};

// A command's outcome: success, or the one-line error the client sees as {"ok":false,"error":"…"}.
struct Outcome {
  std::string error;
  bool ok() const { return error.empty(); }
  static Outcome success() { return {}; }
  static Outcome failure(std::string message) { return {std::move(message)}; }
};

// Implemented by the runtime. Every method runs on the control thread only (never in a signal
// handler), one at a time, while the application's threads keep running. A method adds the members
// of its answer to `response`, an open JSON object that already holds "ok":true (members written
// before a failure are discarded). Members each command must add (README.md, "Control socket"):
class CommandHandler {
 public:
  virtual ~CommandHandler() = default;

  // "devices": [{"device", "in_use_bytes", "cached_bytes", "reserved_bytes", "peak_in_use_bytes",
  // "driver_alloc_calls", "pool_hits", "limit_bytes" (null when none), …}, …]; "process":
  // {"command", "host", "rank", "job"} (rank and job null when the environment names none);
  // "out_of_memory": [{"device", "failures"}, …] for the devices with failures.
  virtual Outcome stats(support::JsonWriter& response) = 0;

  // The `count` sites holding the most live bytes, most first: "sites": [{"stack", "kind",
  // "live_bytes", "live_count", "label"}, …]; "label" names the site's innermost user frame.
  virtual Outcome sites(std::uint64_t count, support::JsonWriter& response) = 0;

  // Empties the pools (fences, free segments, the driver's stream-ordered pools): "released_bytes".
  // `deep`: first asks the Python frameworks loaded in the process to empty their own caches
  // ("frameworks": one entry per step); a failure there is reported, and the pools are flushed.
  virtual Outcome flush(Trigger trigger, bool deep, support::JsonWriter& response) = 0;

  // Writes a report to `path`, or to the configured pattern when `path` is empty: "path" (the file
  // written). A failure (pattern off, unwritable path) says why.
  virtual Outcome report(Trigger trigger, std::string_view path, support::JsonWriter& response) = 0;

  // Writes the crash report of `crash` (reason "crash") while its thread waits: "path".
  virtual Outcome report_crash(const FatalSignal& crash, support::JsonWriter& response) = 0;

  // Releases cached (free) memory until at most `keep_bytes` stay cached per device:
  // "released_bytes".
  virtual Outcome trim(std::uint64_t keep_bytes, support::JsonWriter& response) = 0;

  // Sets or (nullopt) removes the per-device limit of VRAMSHIM_LIMIT: "limit_bytes" (null when
  // none).
  virtual Outcome set_limit(std::optional<std::uint64_t> limit_bytes,
                            support::JsonWriter& response) = 0;

  // Periodic work (timeline sample, idle release), called about every 100 ms.
  virtual void tick() = 0;
};

}  // namespace vramshim::control
