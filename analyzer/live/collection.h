// One look at every process running under the shim: their `stats` and `sites` answers, asked of all
// at once over their control sockets within one time budget, so that a process that does not
// answer (stopped, stuck, gone) costs the budget at most and is counted, never waited for.
#pragma once

#include <array>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory.h"

namespace vramshim::live {

// Why a process is missing from a collection.
enum class Skipped {
  kSilent,     // no answer within the budget (stopped, stuck, or too busy)
  kGone,       // nobody listens on its socket any more
  kUntrusted,  // served by another pid or uid than the socket promises (SO_PEERCRED)
  kFailed,     // an error answer, an unreadable one, or a failure of the socket
};
inline constexpr std::array<Skipped, 4> kSkippedReasons = {Skipped::kSilent, Skipped::kGone,
                                                           Skipped::kUntrusted, Skipped::kFailed};
// "silent", "gone", "untrusted" or "failed".
const char* skipped_name(Skipped reason);

struct ProcessSample {
  cli::SocketEntry socket;
  nlohmann::json stats;  // the `stats` answer (README.md, "Control socket")
  nlohmann::json sites;  // the `sites` answer's "sites" array; null when not asked or not answered
  // The `sites` answer's "live_sites": how many sites hold live bytes; null when not said.
  nlohmann::json live_sites;
};

struct Collection {
  std::vector<ProcessSample> processes;  // those that answered `stats`, ordered by pid
  std::array<size_t, kSkippedReasons.size()> skipped = {};  // by Skipped
  std::vector<std::string> problems;  // one line per skipped process, saying why
  std::vector<pid_t> silent;          // the processes skipped as kSilent
  double seconds = 0;                 // how long the collection took
  double ended_unix_seconds = 0;      // when it ended (wall clock)
  size_t skipped_count(Skipped reason) const { return skipped[static_cast<size_t>(reason)]; }
};

struct CollectOptions {
  int budget_ms = 1000;  // the whole collection never takes longer
  int top_sites = 10;    // `sites N` asked of each process; 0: not asked
};

// Asks every socket `stats` (and `sites N`) at once, each on a connection of its own, and waits for
// the answers until all came or the budget is spent. Answers longer than 16 MiB are refused.
Collection collect(const std::vector<cli::SocketEntry>& sockets, const CollectOptions& options);

}  // namespace vramshim::live
