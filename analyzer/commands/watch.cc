// vramshim watch: one line per --interval about one running process — in use, cached and the sites
// that grew the most since watching began — until the process ends.
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "analyzer/commands/command.h"
#include "analyzer/control/control_client.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/watch_growth.h"
#include "analyzer/render/units.h"

namespace vramshim::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct WatchOptions {
  pid_t pid = 0;
  double interval_seconds = 1.0;
  bool once = false;
  int sites_asked = 100;
  int sites_shown = 3;
};

// One look never takes longer than this: half the interval, from 100 ms to 1 s (as top's).
int budget_ms(const WatchOptions& options) {
  const int half = static_cast<int>(options.interval_seconds * 500);
  return std::max(100, std::min(1000, half));
}

std::string clock_now() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof(text), "%H:%M:%S", std::localtime(&now));
  return text;
}

std::string bytes(const std::optional<std::uint64_t>& value) {
  return value ? analyzer::format_bytes(static_cast<std::int64_t>(*value)) : "?";
}

// "in use 1.0 GiB  cached 20.0 MiB  growing: leak_step +12.0 MiB (1.2 MiB/s), …".
std::string figures_line(const nlohmann::json& stats, const live::WatchGrowth& growth,
                         double elapsed_seconds, size_t shown) {
  std::string line = "in use " + bytes(live::summed_device_figure(stats, "in_use_bytes")) +
                     "  cached " + bytes(live::summed_device_figure(stats, "cached_bytes")) +
                     "  growing: ";
  if (elapsed_seconds <= 0) return line + "-";  // nothing to compare with yet
  const std::vector<live::GrowingLabel> rows = growth.fastest(shown);
  if (rows.empty()) return line + "none";
  for (size_t i = 0; i < rows.size(); ++i) {
    const live::GrowingLabel& row = rows[i];
    if (i > 0) line += ", ";
    line += row.label;
    if (row.kind != "device") line += " [" + row.kind + "]";
    line += " " + analyzer::format_signed_bytes(row.gained_bytes) + " (" +
            analyzer::format_bytes(static_cast<std::int64_t>(static_cast<double>(row.gained_bytes) /
                                                             elapsed_seconds)) +
            "/s)";
  }
  return line;
}

bool process_exists(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// Prints a line: plain into a pipe or file; on a terminal cut to its width, the time in bold.
void print_line(const std::string& time, const std::string& process_text) {
  // The process names the sites: nothing in their names acts on the terminal or makes a line.
  const std::string text = printable(process_text);
  if (!::isatty(STDOUT_FILENO)) {
    std::printf("%s  %s\n", time.c_str(), text.c_str());
  } else {
    winsize size{};
    std::string shown = text;
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > time.size() + 3) {
      const size_t room = size.ws_col - time.size() - 2;
      if (shown.size() > room) {
        size_t cut = room - 1;
        while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
        shown = shown.substr(0, cut) + "…";  // never inside a UTF-8 character of a label
      }
    }
    std::printf("\033[1m%s\033[0m  %s\n", time.c_str(), shown.c_str());
  }
  std::fflush(stdout);
}

class Watch {
 public:
  Watch(const WatchOptions& options, SocketEntry socket)
      : options_(options), socket_(std::move(socket)), growth_(options.sites_asked) {}

  // One look: true when the process answered; false with *ended set when it has ended.
  bool look(bool* ended, std::string* problem) {
    live::CollectOptions collect;
    collect.budget_ms = budget_ms(options_);
    collect.top_sites = options_.sites_asked;
    const live::Collection collection = live::collect({socket_}, collect);
    *ended = false;
    if (!collection.processes.empty()) {
      const live::ProcessSample& sample = collection.processes.front();
      if (looks_++ == 0) start_ = Clock::now();
      stats_ = sample.stats;
      if (!sample.sites.is_null()) growth_.update(sample.sites);
      return true;
    }
    if (collection.skipped_count(live::Skipped::kUntrusted) > 0) {
      throw std::runtime_error(collection.problems.at(0));
    }
    *ended = collection.skipped_count(live::Skipped::kGone) > 0 || !process_exists(socket_.pid);
    *problem = collection.problems.empty() ? std::string("no answer") : collection.problems[0];
    return false;
  }

  std::string line() const {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    return figures_line(stats_, growth_, looks_ > 1 ? elapsed : 0,
                        static_cast<size_t>(options_.sites_shown));
  }

 private:
  const WatchOptions& options_;
  SocketEntry socket_;
  live::WatchGrowth growth_;
  nlohmann::json stats_;
  int looks_ = 0;  // answered
  Clock::time_point start_;
};

void sleep_until(Clock::time_point when) { std::this_thread::sleep_until(when); }

void run_watch(const WatchOptions& options) {
  Watch watch(options, socket_for_pid(options.pid));
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.interval_seconds));
  bool ended = false;
  std::string problem;
  if (options.once) {
    // Two looks an interval apart, so that the line can say what grew.
    for (int look = 0; look < 2; ++look) {
      if (look > 0) sleep_until(Clock::now() + interval);
      if (!watch.look(&ended, &problem)) {
        throw std::runtime_error(ended ? "pid " + std::to_string(options.pid) + " ended" : problem);
      }
    }
    print_line(clock_now(), watch.line());
    return;
  }
  for (Clock::time_point next = Clock::now();; next += interval) {
    sleep_until(next);
    if (watch.look(&ended, &problem)) {
      print_line(clock_now(), watch.line());
    } else if (ended) {
      print_line(clock_now(), "pid " + std::to_string(options.pid) + " ended");
      return;
    } else {
      print_line(clock_now(), problem);
    }
    // A look that ran long (a silent process) does not make the next ones come in a burst.
    if (Clock::now() > next + interval) next = Clock::now();
  }
}

}  // namespace

void add_watch_command(CLI::App& app) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* command = app.add_subcommand(
      "watch",
      "Print a line every --interval about a running process: in use, cached, and the sites that "
      "grew the most since watching began; ends when the process ends");
  command->add_option("pid", options->pid, "The process")
      ->required()
      ->check(CLI::Range(1, std::numeric_limits<pid_t>::max()));
  command->add_option("--interval", options->interval_seconds, "Seconds between lines")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  command->add_flag("--once", options->once,
                    "Look twice, --interval apart, print one line and exit");
  command
      ->add_option("--sites", options->sites_asked,
                   "Sites asked of the process at each look, those holding the most live bytes; "
                   "a site first seen after the first look counts from the least the first look "
                   "listed, so its growth is a lower bound")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  command->add_option("--top", options->sites_shown, "Growing sites shown per line")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  command->footer(
      "Each line: the time, the bytes in use and cached (all devices together), and the sites "
      "(labelled by their innermost user frame, as in the other tables) that gained the most "
      "since the first look, with the gain and its rate per second since then (the first line, "
      "with nothing to compare yet, says \"growing: -\"). A look the "
      "process does not answer within half the interval (at most 1 s) prints why instead. When "
      "the process ends, a last line says so and watch exits 0. On a terminal the lines are cut "
      "to its width; in a pipe or a file they are plain text, whole.");
  command->callback([options] { run_watch(*options); });
}

}  // namespace vramshim::cli
