// vramshim replay TRACE: an allocation trace replayed through vramshim's pool in-process, with
// several pool policies side by side and the trace's own allocator's figures.
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"
#include "analyzer/model/trace_reader.h"
#include "analyzer/render/terminal_safe.h"
#include "analyzer/replay/replay_policy.h"
#include "analyzer/replay/replay_table.h"
#include "analyzer/replay/trace_replay.h"

namespace vramshim::cli {
namespace {

struct ReplayCommand {
  std::string trace;
  std::vector<std::string> policies = analyzer::default_replay_policies();
  int timed_runs = 5;
  bool json = false;

  void run() const {
    using namespace analyzer;
    // Policies first: a typo is reported before a large trace is read.
    std::vector<ReplayPolicy> parsed;
    for (const std::string& policy : policies) parsed.push_back(parse_replay_policy(policy));
    const TraceReplay replay =
        replay_trace(read_allocation_trace(trace), trace, parsed, timed_runs);
    // Whole output at once: a failure midway prints the error alone.
    std::ostringstream out;
    if (json) {
      out << replay_json(replay).dump(2) << '\n';
      std::cout << out.str();
    } else {
      render_replay_text(out, replay);
      std::cout << terminal_safe(out.str());  // it names the trace's file
    }
  }
};

}  // namespace

void add_replay_command(CLI::App& app) {
  auto command = std::make_shared<ReplayCommand>();
  CLI::App* sub = app.add_subcommand(
      "replay",
      "Replay a PyTorch memory snapshot through vramshim's pool policies: peak reserved, "
      "driver calls, fragmentation, time per call");
  sub->add_option("trace", command->trace,
                  "PyTorch memory snapshot (torch.cuda.memory._dump_snapshot after "
                  "torch.cuda.memory._record_memory_history)")
      ->required();
  sub->add_option("--policy", command->policies,
                  "Pool policies to replay with: default, no-split, driver-only, max-cached=SIZE "
                  "(default: default,no-split,driver-only)")
      ->delimiter(',')
      ->expected(1, -1);
  sub->add_option("--runs", command->timed_runs,
                  "Timed replays per policy; ns/op is the fastest run's")
      ->check(CLI::Range(1, 1000));
  sub->add_flag("--json", command->json, "The figures as JSON, in bytes and nanoseconds");
  sub->callback([command] { command->run(); });
}

}  // namespace vramshim::cli
