// vramshim top: a full-screen view of every process running under vramshim on this node, refreshed
// every --interval, with the top sites of the selected one; --once (or no terminal, or one that
// cannot show a full screen) prints one plain table.
#include <unistd.h>

#include <chrono>
#include <clocale>
#include <cstdio>
#include <ctime>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/full_screen_terminal.h"
#include "analyzer/control/control_client.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/shimmed_sockets.h"
#include "analyzer/live/top_table.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/render/units.h"

// Last, and as functions: ncurses' macros (erase, refresh, timeout) would clash with C++ names.
#define NCURSES_NOMACROS
#include <ncurses.h>

namespace vramshim::cli {
namespace {

constexpr int kSitesShown = 20;
constexpr int kKeyPollMs = 100;
constexpr char kHelp[] =
    "up/down select  f flush  d deep flush  s snapshot a report  o sort  q quit";

struct TopOptions {
  double interval_seconds = 1.0;
  bool once = false;
  std::string only_directory;
};

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A collection's budget: a look never holds the screen for long, whatever a process does.
int budget_ms(const TopOptions& options) {
  const int half = static_cast<int>(options.interval_seconds * 500);
  return std::max(100, std::min(1000, half));
}

live::Collection look(const TopOptions& options, const std::vector<SocketEntry>& sockets,
                      int top_sites) {
  live::CollectOptions collect;
  collect.budget_ms = budget_ms(options);
  collect.top_sites = top_sites;
  return live::collect(sockets, collect);
}

void print_once(const TopOptions& options) {
  std::vector<std::string> refused;
  const std::vector<SocketEntry> sockets = live::shimmed_sockets(options.only_directory, &refused);
  for (const std::string& why : refused) analyzer::print_diagnostic(why);
  const live::Collection collection = look(options, sockets, 0);
  live::TopTable table;
  table.update(collection, monotonic_seconds());
  std::printf("%s", live::plain_table(table.rows(live::TopSort::kInUse)).c_str());
}

// A socket request made on a thread of its own, so that a slow answer (a deep flush waits for
// Python's GIL) never freezes the screen, nor holds up quitting.
struct PendingAction {
  std::future<std::string> outcome;
};

std::string act(SocketEntry socket, const std::string& request) {
  try {
    const nlohmann::json answer = require_ok(ask(socket, request, 15000), socket.pid);
    if (answer.contains("released_bytes")) {
      std::string said = "pid " + std::to_string(socket.pid) + ": " + request + " released " +
                         live::format_figure_bytes(live::answer_figure(answer, "released_bytes"));
      if (answer.contains("capture") && answer["capture"].is_string()) {
        said += " (" + analyzer::terminal_safe(answer["capture"].get<std::string>()) + ")";
      }
      return said;
    }
    if (answer.contains("path") && answer["path"].is_string()) {
      return "pid " + std::to_string(socket.pid) + ": report written to " +
             answer["path"].get<std::string>();
    }
    return "pid " + std::to_string(socket.pid) + ": " + request + " done";
  } catch (const std::exception& e) {
    return e.what();
  }
}

class Screen {
 public:
  explicit Screen(const TopOptions& options) : options_(options) {
    std::setlocale(LC_ALL, "");
    // Not initscr(), which exits the program itself when the terminal cannot be set up.
    screen_ = newterm(nullptr, stdout, stdin);
    if (screen_ == nullptr) throw std::runtime_error("top: cannot set up the terminal");
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(kKeyPollMs);
  }
  ~Screen() {
    endwin();
    delscreen(screen_);
  }

  void run() {
    double next_look = 0;
    for (;;) {
      if (monotonic_seconds() >= next_look) {
        refresh_figures();
        next_look = monotonic_seconds() + options_.interval_seconds;
        draw();
      }
      if (pending_ &&
          pending_->outcome.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        status_ = printable(pending_->outcome.get());  // the process's answer, or an error
        pending_.reset();
        next_look = 0;  // show what the action changed
      }
      const int key = getch();
      if (key == ERR) continue;
      if (key == 'q' || key == 'Q') return;
      handle(key);
      draw();
    }
  }

 private:
  void refresh_figures() {
    std::vector<std::string> refused;
    sockets_ = live::shimmed_sockets(options_.only_directory, &refused);
    if (!refused.empty()) status_ = printable(refused.front());
    const double now = monotonic_seconds();
    table_.update(look(options_, sockets_, 0), now);
    rows_ = table_.rows(sort_);
    select_index();
    const std::optional<SocketEntry> socket = selected_socket();
    if (socket) {
      const live::Collection sites = look(options_, {*socket}, kSitesShown);
      if (!sites.processes.empty())
        site_table_.update(selected_process_, sites.processes[0].sites, now);
    }
  }

  // Keeps the selection on the same process when rows move.
  void select_index() {
    if (rows_.empty()) {
      selected_ = 0;
      return;
    }
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (process_of(rows_[i]) == selected_process_) {
        selected_ = i;
        return;
      }
    }
    selected_ = std::min(selected_, rows_.size() - 1);
    selected_process_ = process_of(rows_[selected_]);
  }

  static live::ProcessKey process_of(const live::TopRow& row) { return {row.uid, row.pid}; }

  // The socket of the selected row's process: by uid and pid, as root may find sockets of one pid
  // in two users' directories.
  std::optional<SocketEntry> selected_socket() const {
    if (rows_.empty()) return std::nullopt;
    for (const SocketEntry& socket : sockets_) {
      if (live::ProcessKey{socket.owner, socket.pid} == selected_process_) return socket;
    }
    return std::nullopt;
  }

  void start(const std::string& request) {
    const std::optional<SocketEntry> socket = selected_socket();
    if (!socket) return;
    if (pending_) {
      status_ = "waiting for the previous request";
      return;
    }
    status_ = "pid " + std::to_string(socket->pid) + ": " + request + "…";
    auto outcome = std::make_shared<std::promise<std::string>>();
    pending_.emplace(PendingAction{outcome->get_future()});
    std::thread([outcome, socket = *socket, request] {
      outcome->set_value(act(socket, request));
    }).detach();
  }

  void handle(int key) {
    switch (key) {
      case KEY_UP:
      case 'k':
        if (selected_ > 0) selected_process_ = process_of(rows_[--selected_]);
        break;
      case KEY_DOWN:
      case 'j':
        if (selected_ + 1 < rows_.size()) selected_process_ = process_of(rows_[++selected_]);
        break;
      case 'f':
        start("flush");
        break;
      case 'd':
        start("flush deep");
        break;
      case 's':
        start("report");
        break;
      case 'o':
        sort_ = live::next_top_sort(sort_);
        rows_ = table_.rows(sort_);
        select_index();
        break;
      case 'h':
      case '?':
        status_ = kHelp;
        break;
      default:
        break;
    }
  }

  void line(int y, const std::string& text, int attributes = A_NORMAL) {
    attron(attributes);
    mvaddnstr(y, 0, text.c_str(), COLS);
    attroff(attributes);
  }

  void draw() {
    erase();
    char text[512];
    std::time_t now = std::time(nullptr);
    char clock[16];
    std::strftime(clock, sizeof(clock), "%H:%M:%S", std::localtime(&now));
    std::snprintf(text, sizeof(text), "vramshim top  %s  %zu rows, every %.1f s, sorted by %s",
                  clock, rows_.size(), options_.interval_seconds, live::top_sort_name(sort_));
    line(0, text, A_BOLD);
    const std::string table = live::plain_table(rows_);
    std::vector<std::string> lines;  // the header, then one line per row
    for (size_t start = 0; start < table.size();) {
      const size_t end = std::min(table.find('\n', start), table.size());
      lines.push_back(table.substr(start, end - start));
      start = end + 1;
    }
    int y = 1;
    line(y++, lines.at(0), A_UNDERLINE);
    // The rows that fit in the upper half, scrolled so that the selected one is among them.
    const size_t shown = static_cast<size_t>(std::max(1, LINES / 2 - 2));
    const size_t first = selected_ >= shown ? selected_ - shown + 1 : 0;
    for (size_t index = first;
         index < rows_.size() && index + 1 < lines.size() && index < first + shown; ++index) {
      line(y++, lines[index + 1],
           index == selected_    ? A_REVERSE
           : rows_[index].silent ? A_DIM
                                 : A_NORMAL);
    }
    if (rows_.empty()) line(y++, "no process runs under vramshim");
    ++y;
    if (!rows_.empty() && site_table_.process() == selected_process_) {
      line(y++,
           "top sites of pid " + std::to_string(selected_process_.second) + " of uid " +
               std::to_string(selected_process_.first),
           A_BOLD);
      std::snprintf(text, sizeof(text), "%10s %12s %8s %8s  %s", "LIVE", "GROWTH", "COUNT", "KIND",
                    "SITE");
      line(y++, text, A_UNDERLINE);
      for (const live::SiteRow& site : site_table_.rows()) {
        if (y >= LINES - 2) break;
        std::snprintf(text, sizeof(text), "%10s %12s %8s %8s  %s",
                      live::format_figure_bytes(site.live_bytes).c_str(),
                      live::format_growth(site.growth_per_second).c_str(),
                      live::format_figure_count(site.live_count).c_str(),
                      printable(site.kind).c_str(), printable(site.label).c_str());
        line(y++, text);
      }
    }
    line(LINES - 2, status_);
    line(LINES - 1, kHelp, A_REVERSE);
    refresh();
  }

  SCREEN* screen_ = nullptr;
  const TopOptions& options_;
  std::vector<SocketEntry> sockets_;
  live::TopTable table_;
  live::SiteTable site_table_;
  std::vector<live::TopRow> rows_;
  live::TopSort sort_ = live::TopSort::kInUse;
  size_t selected_ = 0;
  live::ProcessKey selected_process_{0, 0};
  std::string status_;
  std::optional<PendingAction> pending_;
};

}  // namespace

void add_top_command(CLI::App& app) {
  auto options = std::make_shared<TopOptions>();
  CLI::App* command = app.add_subcommand(
      "top",
      "Watch every process running under vramshim on this node (every user's, for root), live");
  command->add_option("--interval", options->interval_seconds, "Seconds between refreshes")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  command->add_flag("--once", options->once,
                    "Print one plain table and exit (also what happens without a terminal, or on "
                    "one that cannot show a full screen: TERM unset, unknown or dumb)");
  command->add_option("--dir", options->only_directory, "Look only in this socket directory");
  command->callback([options] {
    if (options->once || !::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
      print_once(*options);
      return;
    }
    if (const std::string problem = full_screen_problem(); !problem.empty()) {
      analyzer::print_diagnostic("top: " + problem + "; printing one table, as top --once does");
      print_once(*options);
      return;
    }
    Screen screen(*options);
    screen.run();
  });
}

}  // namespace vramshim::cli
