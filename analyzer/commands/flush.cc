// vramshim flush: empties the pools of running processes and says how much each released. With
// --deep, the Python frameworks in them (PyTorch, CuPy) empty their own caches first; in a Python
// 3.14+ process started without the shim, through sys.remote_exec (remote_deep_flush.h).
#include <cstdio>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/commands/remote_deep_flush.h"
#include "analyzer/control/control_client.h"
#include "analyzer/live/collection.h"
#include "analyzer/live/top_table.h"
#include "analyzer/render/json_document.h"
#include "analyzer/render/terminal_safe.h"

namespace vramshim::cli {
namespace {

struct FlushOptions {
  std::vector<pid_t> pids;
  bool all = false;
  bool deep = false;
  std::string directory;
  std::string format;
};

// One process's outcome: its answer, or why there is none.
struct FlushOutcome {
  pid_t pid;
  nlohmann::json answer;  // null when the flush failed
  std::string error;
  // Not under the shim, its frameworks reached through sys.remote_exec by this interpreter.
  std::string remote_python;
};

// A flush waits for the GPU work in flight; give it time.
constexpr int kFlushTimeoutMs = 60000;

// Whether object[name] is a string, or not there.
bool string_or_absent(const nlohmann::json& object, const char* name) {
  const auto member = object.find(name);
  return member == object.end() || member->is_string();
}

// Whether object[name] is an unsigned integer, or not there.
bool unsigned_or_absent(const nlohmann::json& object, const char* name) {
  const auto member = object.find(name);
  return member == object.end() || member->is_number_unsigned();
}

// What in a flush answer is not of the type read below (README.md, "Control socket"); empty if
// nothing is.
std::string misshapen_flush(const nlohmann::json& answer) {
  if (!unsigned_or_absent(answer, "released_bytes"))
    return "released_bytes is not an unsigned integer";
  if (!string_or_absent(answer, "frameworks_error")) return "frameworks_error is not a string";
  if (!string_or_absent(answer, "capture")) return "capture is not a string";
  const auto frameworks = answer.find("frameworks");
  if (frameworks == answer.end()) return {};
  if (!frameworks->is_array()) return "frameworks is not an array of objects";
  for (const nlohmann::json& step : *frameworks) {
    if (!step.is_object()) return "frameworks is not an array of objects";
    for (const char* name : {"step", "outcome", "detail"}) {
      if (!string_or_absent(step, name))
        return std::string("a framework step's ") + name + " is not a string";
    }
    if (!unsigned_or_absent(step, "released_bytes"))
      return "a framework step's released_bytes is not an unsigned integer";
  }
  return {};
}

// The answer to `request` if it is a success of the shape misshapen_flush expects; else throws
// "pid N: …", why.
nlohmann::json checked_answer(const SocketEntry& target, const std::string& request) {
  nlohmann::json answer = require_ok(ask(target, request, kFlushTimeoutMs), target.pid);
  const std::string misshapen = misshapen_flush(answer);
  if (!misshapen.empty()) {
    throw std::runtime_error("pid " + std::to_string(target.pid) + ": the answer to " + request +
                             " is misshapen: " + misshapen);
  }
  return answer;
}

// What an answer or a framework step says it released, as printed: none said is 0 bytes; a figure
// past 2^62 is unknown, as in stats and top (live::answer_figure).
std::optional<std::uint64_t> released_bytes(const nlohmann::json& said) {
  if (!said.contains("released_bytes")) return 0;
  return live::answer_figure(said, "released_bytes");
}

// The same for --format json: null when unknown or not said.
nlohmann::json released_json(const nlohmann::json& said) {
  const std::optional<std::uint64_t> released = live::answer_figure(said, "released_bytes");
  return released ? nlohmann::json(*released) : nlohmann::json();
}

// The deep flush's steps, one line each. Frameworks that could not be flushed (no Python in the
// process, a capture running, the GIL not taken in time) are said so; the pool is flushed anyway.
void print_frameworks(pid_t pid, const nlohmann::json& answer) {
  if (answer.contains("frameworks_error")) {
    std::printf("%d: frameworks not flushed: %s\n", pid,
                analyzer::terminal_safe(answer["frameworks_error"].get<std::string>()).c_str());
    return;
  }
  for (const nlohmann::json& step : answer.value("frameworks", nlohmann::json::array())) {
    // The process's own words: nothing in them acts on the terminal.
    const std::string outcome = analyzer::terminal_safe(step.value("outcome", ""));
    const std::string detail = analyzer::terminal_safe(step.value("detail", ""));
    std::printf("%d: %s %s", pid, analyzer::terminal_safe(step.value("step", "")).c_str(),
                outcome.c_str());
    if (outcome == "ran") {
      std::printf(", released %s", live::format_figure_bytes(released_bytes(step)).c_str());
    }
    if (detail.empty()) {
      std::printf("\n");
    } else {
      std::printf(" (%s)\n", detail.c_str());
    }
  }
}

void print_outcome(const FlushOutcome& outcome) {
  if (!outcome.error.empty()) return;  // said on standard error as it happened
  print_frameworks(outcome.pid, outcome.answer);
  if (outcome.answer.contains("capture")) {
    std::printf("%d: %s\n", outcome.pid,
                analyzer::terminal_safe(outcome.answer["capture"].get<std::string>()).c_str());
  }
  const std::optional<std::uint64_t> released = released_bytes(outcome.answer);
  std::printf("%d: released %s", outcome.pid, live::format_figure_bytes(released).c_str());
  if (released) std::printf(" (%llu bytes)", static_cast<unsigned long long>(*released));
  std::printf("\n");
}

nlohmann::json outcome_json(const FlushOutcome& outcome, bool deep) {
  using nlohmann::json;
  const json& answer = outcome.answer;
  json entry = {{"pid", outcome.pid},
                {"flushed", outcome.error.empty() && outcome.remote_python.empty()},
                {"released_bytes", released_json(answer)},
                {"capture", answer.is_object() ? answer.value("capture", json()) : json()},
                {"error", outcome.error.empty() ? json() : json(outcome.error)}};
  if (deep) {
    json steps;
    if (answer.is_object() && answer.contains("frameworks")) {
      steps = json::array();
      for (const json& step : answer["frameworks"]) {
        steps.push_back({{"step", step.value("step", json())},
                         {"outcome", step.value("outcome", json())},
                         {"released_bytes", released_json(step)},
                         {"detail", step.value("detail", json())}});
      }
    }
    entry["frameworks"] = std::move(steps);
    entry["frameworks_error"] =
        answer.is_object() ? answer.value("frameworks_error", json()) : json();
    entry["remote_exec"] = outcome.remote_python.empty() ? json() : json(outcome.remote_python);
  }
  return entry;
}

// --deep on a process with no shim socket: its frameworks through sys.remote_exec. Fills the
// outcome with what they did, or says on stderr why they could not be reached, after why there is
// no socket (`outcome.error`).
void flush_without_shim(FlushOutcome& outcome, bool json) {
  try {
    const RemoteFlushResult result = remote_deep_flush(outcome.pid);
    outcome.answer = {{"frameworks", result.frameworks}};
    outcome.error.clear();
    outcome.remote_python = result.python;
    if (json) return;
    std::printf(
        "%d: not under the shim, so no pool to flush; its frameworks asked through "
        "sys.remote_exec (%s)\n",
        outcome.pid, analyzer::terminal_safe(result.python).c_str());
    print_frameworks(outcome.pid, outcome.answer);
  } catch (const std::exception& e) {
    outcome.error += "; ";
    outcome.error += e.what();
    analyzer::print_diagnostic(outcome.error);
  }
}

void flush(const FlushOptions& options) {
  if (options.all == !options.pids.empty()) throw std::runtime_error("flush needs PID… or --all");
  std::vector<SocketEntry> targets;
  // One per process asked, in the order asked; `slots` has each target's.
  std::vector<FlushOutcome> outcomes;
  std::vector<size_t> slots;
  if (options.all) {
    targets = live_sockets(socket_directories(options.directory));
    if (targets.empty()) {
      std::fprintf(stderr, "vramshim: no process of this user runs under vramshim\n");
    }
    for (const SocketEntry& target : targets) {
      slots.push_back(outcomes.size());
      outcomes.push_back({target.pid, nullptr, {}, {}});
    }
  } else {
    // Every process that can be flushed is, whatever becomes of the others.
    for (pid_t pid : options.pids) {
      try {
        targets.push_back(socket_for_pid(pid));
        slots.push_back(outcomes.size());
        outcomes.push_back({pid, nullptr, {}, {}});
      } catch (const std::exception& e) {
        FlushOutcome outcome{pid, nullptr, e.what(), {}};
        if (options.deep) {
          flush_without_shim(outcome, options.format == "json");
        } else {
          analyzer::print_diagnostic(e.what());
        }
        outcomes.push_back(std::move(outcome));
      }
    }
  }

  // All at once, so one slow process does not hold up the others.
  const std::string request = options.deep ? "flush deep" : "flush";
  std::vector<std::future<nlohmann::json>> answers;
  for (const SocketEntry& target : targets) {
    answers.push_back(std::async(std::launch::async,
                                 [target, request] { return checked_answer(target, request); }));
  }
  const bool json = options.format == "json";
  for (size_t i = 0; i < targets.size(); ++i) {
    FlushOutcome& outcome = outcomes[slots[i]];
    try {
      outcome.answer = answers[i].get();
    } catch (const std::exception& e) {
      analyzer::print_diagnostic(e.what());
      outcome.error = e.what();
    }
    if (!json) print_outcome(outcome);
  }
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const FlushOutcome& outcome : outcomes)
      list.push_back(outcome_json(outcome, options.deep));
    nlohmann::json doc = analyzer::json_document("flush");
    doc["deep"] = options.deep;
    doc["processes"] = std::move(list);
    analyzer::write_json_document(std::cout, doc);
  }
  std::fflush(stdout);
  for (const FlushOutcome& outcome : outcomes) {
    if (!outcome.error.empty()) throw ExitStatus{1};
  }
}

}  // namespace

void add_flush_command(CLI::App& app) {
  auto options = std::make_shared<FlushOptions>();
  CLI::App* command = app.add_subcommand(
      "flush", "Release the cached GPU memory of running processes back to the driver");
  command->add_option("pid", options->pids, "Processes to flush");
  command->add_flag("--all", options->all,
                    "Flush every process of this user that runs under vramshim");
  command->add_flag("--deep", options->deep,
                    "First ask PyTorch and CuPy in the process to empty their own caches");
  command->add_option("--dir", options->directory,
                      "With --all: look only in this socket directory");
  add_format_option(command, options->format);
  command->footer(
      "Exit status:\n"
      "  0  every process asked had its pool flushed (with --deep, each step's outcome is\n"
      "     printed, also when a process runs no Python); with --deep, a Python 3.14+ process\n"
      "     started without the shim had its frameworks' release run (sys.remote_exec, by its\n"
      "     own interpreter or python3.14+ on PATH; it has no pool to flush)\n"
      "  1  a process could not be found, trusted or flushed (the others are flushed all the\n"
      "     same; one line each on standard error; --format json lists it with its error),\n"
      "     or, with --deep and no shim in it, its frameworks could not be reached: no Python,\n"
      "     Python older than 3.14, no 3.14+ interpreter found, no permission (another user,\n"
      "     ptrace_scope), remote debugging disabled in it\n"
      "  2  a usage error (one line)\n");
  command->callback([options] { flush(*options); });
}

}  // namespace vramshim::cli
