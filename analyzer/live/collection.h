// One look at every process running under the shim: their `stats` and `sites` answers, asked of all
// at once over their control sockets within one time budget, so that a process that does not
// answer (stopped, stuck, gone) costs the budget at most and is counted, never waited for.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/control/socket_directory.h"

namespace vramshim::live {

// Why a process is missing from a collection.
enum class Skipped {
  kSilent,     // no answer within the budget (stopped, stuck, or too busy)
  kGone,       // nobody listens on its socket any more
  kUntrusted,  // served by another process than the socket promises, or replaced since listed
  kFailed,     // an error answer, an unreadable one, or a failure of the socket
  kOversized,  // an answer longer than its request's bound, or past its user's share of memory
};
inline constexpr std::array<Skipped, 5> kSkippedReasons = {
    Skipped::kSilent, Skipped::kGone, Skipped::kUntrusted, Skipped::kFailed, Skipped::kOversized};
// "silent", "gone", "untrusted", "failed" or "oversized".
const char* skipped_name(Skipped reason);

// The longest answers taken from a process. A shim's `stats` answer is a few KiB (a command line
// of at most 4 KiB, some 400 bytes per device); its `sites` answer to the most sites it gives
// (1,000, each label at most 100 bytes) is under 1 MiB even with every label byte escaped.
inline constexpr size_t kMaxStatsAnswerBytes = size_t{1} << 20;
inline constexpr size_t kMaxSitesAnswerBytes = size_t{2} << 20;
// The memory the answers of one user's processes may take in a collection (read, then parsed),
// and that of all users' but root's and the CLI's own (which others must not crowd out): a user's
// processes past it are skipped as kOversized (a `sites` answer past it only leaves that
// process's sites out, with a problem line), so that a co-tenant starting processes that answer at
// length cannot swell the exporter. A process with the default --top-sites 10 takes some tens of
// KiB: thousands fit; at --top-sites 1000 (about 760 KB parsed each) about 88 per user.
inline constexpr size_t kMaxAnswerBytesPerUser = size_t{64} << 20;
inline constexpr size_t kMaxAnswerBytesPerCollection = size_t{256} << 20;

// The sockets of processes gone (killed by SIGKILL or the OOM killer, which leave the file) whose
// removal one collection tries, so that removing them costs a collection little.
inline constexpr size_t kMaxRemovedPerCollection = 256;

// The most devices a `stats` answer may list (in "devices", and in "out_of_memory"): each device is
// a dozen series of the exporter. The shim counts out-of-memory failures for 64 devices at most
// (OutOfMemoryCounts); a longer list is refused.
inline constexpr size_t kMaxDevicesPerProcess = 64;

// A figure of a process's answer (bytes, a count): a non-negative integer of at most
// analyzer::kFigureLimit, as in reports; nullopt for anything else, which is shown as unknown.
std::optional<std::uint64_t> answer_figure(const nlohmann::json& value);
// object[name] as answer_figure reads it; nullopt when absent too.
std::optional<std::uint64_t> answer_figure(const nlohmann::json& object, const char* name);
// a + b, held at analyzer::kFigureLimit.
std::uint64_t saturating_figure_sum(std::uint64_t a, std::uint64_t b);
// A `stats` answer's figure `name` summed over its devices (those without it left out); unknown
// when one device's is not a figure.
std::optional<std::uint64_t> summed_device_figure(const nlohmann::json& stats, const char* name);
// entry["device"]: an integer a device can be numbered by (below analyzer::kMaxDeviceNumber), or
// nullopt.
std::optional<int> device_number(const nlohmann::json& entry);

// A process as a collection tells processes apart: the uid its socket belongs to, and its pid (two
// users' directories may each hold a socket named after one pid).
using ProcessKey = std::pair<uid_t, pid_t>;

struct ProcessSample {
  cli::SocketEntry socket;
  nlohmann::json stats;  // the `stats` answer (README.md, "Control socket")
  nlohmann::json sites;  // the `sites` answer's "sites" array; null when not asked or not answered
  // The `sites` answer's "live_sites": how many sites hold live bytes; null when not said.
  nlohmann::json live_sites;
};

using SkippedCounts = std::array<size_t, kSkippedReasons.size()>;  // by Skipped

struct Collection {
  std::vector<ProcessSample> processes;  // those that answered `stats`, ordered by pid
  // By the uid the sockets belong to, for every uid with a socket in the collection: a user can
  // only leave sockets in their own directories, so their counts say nothing of other users'.
  std::map<uid_t, SkippedCounts> skipped;
  std::vector<std::string> problems;  // one line per skipped process, saying why
  std::vector<ProcessKey> silent;     // the processes skipped as kSilent
  double seconds = 0;                 // how long the collection took
  double ended_unix_seconds = 0;      // when it ended (wall clock)
  // Of all users.
  size_t skipped_count(Skipped reason) const;
};

struct CollectOptions {
  int budget_ms = 1000;  // the whole collection never takes longer
  int top_sites = 10;    // `sites N` asked of each process; 0: not asked
};

// Asks every socket `stats` (and `sites N`) at once, each on a connection of its own, and waits for
// the answers until all came or the budget is spent. Answers longer than kMaxStatsAnswerBytes or
// kMaxSitesAnswerBytes, or past kMaxAnswerBytesPerUser or kMaxAnswerBytesPerCollection, are
// refused; a `stats` answer listing an unnumbered, misnumbered or (past kMaxDevicesPerProcess) one
// device too many is refused, and of a device listed twice only the first entry is kept. The
// sockets of processes skipped as kGone are removed, as `ps` removes them (cli::remove_if_stale;
// only from a directory trusted for the socket's owner), kMaxRemovedPerCollection at most.
Collection collect(const std::vector<cli::SocketEntry>& sockets, const CollectOptions& options);

// collect() of every process running under the shim, as shimmed_sockets(only_directory) finds
// them (*refused and *cut as it gives them). The time spent finding them counts in the
// collection's seconds, which would otherwise hide a listing slowed by directories made to slow it.
Collection collect_all(const std::string& only_directory, const CollectOptions& options,
                       std::vector<std::string>* refused, std::set<uid_t>* cut);

}  // namespace vramshim::live
