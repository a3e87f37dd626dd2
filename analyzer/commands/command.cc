#include "analyzer/commands/command.h"
#include "analyzer/render/terminal_safe.h"

#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace vramshim::cli {
namespace {

constexpr int kUsageError = 2;

const char kExitStatus[] =
    "Exit status:\n"
    "  0  success\n"
    "  1  the command could not do its job (one line on standard error: \"vramshim: ...\")\n"
    "  2  a usage error: an unknown subcommand or option, a missing or bad argument (one line)\n";

// The exit statuses of every subcommand, for the top-level help.
const char kAllExitStatuses[] =
    "Exit status:\n"
    "  0        success\n"
    "  1        the command could not do its job (one line on standard error: \"vramshim: ...\");\n"
    "           flush: a process could not be flushed (the others are flushed all the same)\n"
    "  2        a usage error (one line, naming the valid subcommands or options)\n"
    "  run:     the command's own status; 126 when it cannot be executed, 127 when it is not\n"
    "           found; when signal N ended it, run ends by signal N: a shell shows 128+N then\n";

// The names a user can type for each visible subcommand, "run, ps, flush, ...".
std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty() || sub->get_group().empty()) continue;  // option groups, hidden
    if (!names.empty()) names += ", ";
    names += sub->get_name();
  }
  return names;
}

// The option names of a subcommand, "--top, --leaks, -o/--output, ...".
std::string option_names(const CLI::App& sub) {
  std::string names;
  for (const CLI::Option* option : sub.get_options()) {
    if (option->get_positional() && option->get_lnames().empty() && option->get_snames().empty()) {
      continue;
    }
    std::string name;
    for (const std::string& s : option->get_snames()) name += (name.empty() ? "-" : "/-") + s;
    for (const std::string& l : option->get_lnames()) name += (name.empty() ? "--" : "/--") + l;
    if (name.empty()) continue;
    if (!names.empty()) names += ", ";
    names += name;
  }
  return names;
}

// The subcommand the command line names (its first word that is not an option), or null with
// `word` set to that word when it names none; null and `word` empty when there is none.
CLI::App* named_subcommand(CLI::App& app, int argc, char** argv, std::string& word) {
  word.clear();
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // the top level has flags only (--help, --version)
    word = argv[i];
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->check_name(word)) return sub;
    }
    return nullptr;
  }
  return nullptr;
}

// The first word before the subcommand that is not one of the program's own options; empty if none.
std::string unknown_top_level_option(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc && argv[i][0] == '-'; ++i) {
    const std::string word = argv[i];
    const std::string name = word.substr(0, word.find('='));
    bool known = false;
    for (const CLI::Option* option : app.get_options()) known |= option->check_name(name);
    if (!known) return word;
  }
  return {};
}

// CLI11's messages begin with a capital ("The following argument was not expected").
std::string uncapitalized(std::string text) {
  if (text.size() > 1 && std::isupper(static_cast<unsigned char>(text[0])) &&
      std::islower(static_cast<unsigned char>(text[1]))) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

// A usage error as one line naming what is valid; returns its exit status.
int usage_error(CLI::App& app, const CLI::ParseError& error, int argc, char** argv) {
  std::string word;
  CLI::App* sub = named_subcommand(app, argc, argv, word);
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr;
  if (sub == nullptr && !word.empty()) {
    analyzer::print_diagnostic("unknown subcommand '" + word +
                               "'; the subcommands are: " + subcommand_names(app));
  } else if (const std::string option = unknown_top_level_option(app, argc, argv);
             sub == nullptr && !option.empty()) {
    analyzer::print_diagnostic("unknown option " + option +
                               "; the options are: " + option_names(app) +
                               "; the subcommands are: " + subcommand_names(app));
  } else if (sub == nullptr) {
    analyzer::print_diagnostic("a subcommand is required: " + subcommand_names(app) +
                               " (vramshim --help for more)");
  } else if (extras) {
    analyzer::print_diagnostic(sub->get_name() + ": " + uncapitalized(error.what()) +
                               "; its options are: " + option_names(*sub) + " (vramshim help " +
                               sub->get_name() + ")");
  } else {
    analyzer::print_diagnostic(sub->get_name() + ": " + uncapitalized(error.what()) +
                               " (vramshim help " + sub->get_name() + ")");
  }
  return kUsageError;
}

// The subcommands whose arguments end in a command line of another program (run), and where
// its words go.
std::map<const CLI::App*, std::vector<std::string>*>& command_lines() {
  static std::map<const CLI::App*, std::vector<std::string>*> subcommands;
  return subcommands;
}

// The words of the command line that the parser sees: up to the first word after `sub`'s name that
// is neither one of its options nor an option's value, or up to "--"; the rest go to `command`.
std::vector<std::string> split_command_line(CLI::App& app, int argc, char** argv) {
  std::vector<std::string> words(argv, argv + argc);
  std::string word;
  CLI::App* sub = named_subcommand(app, argc, argv, word);
  const auto taker = command_lines().find(sub);
  if (taker == command_lines().end()) return words;
  size_t i = 1;
  while (words[i] != word) ++i;
  for (++i; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "--") {
      taker->second->assign(words.begin() + static_cast<std::ptrdiff_t>(i) + 1, words.end());
      break;
    }
    if (w.size() > 1 && w[0] == '-') {
      const size_t equals = w.find('=');
      const CLI::Option* option = sub->get_option_no_throw(w.substr(0, equals));
      if (option != nullptr && option->get_items_expected_max() > 0 && equals == std::string::npos)
        ++i;
      continue;  // an unknown option is left to the parser, which names the valid ones
    }
    taker->second->assign(words.begin() + static_cast<std::ptrdiff_t>(i), words.end());
    break;
  }
  words.resize(std::min(i, words.size()));
  return words;
}

// `vramshim help [SUBCOMMAND]`: the help of the program or of one subcommand.
void add_help_command(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  CLI::App* help = app.add_subcommand("help", "Show the help of vramshim or of one subcommand");
  help->add_option("subcommand", *name, "A subcommand");
  help->callback([&app, name] {
    if (name->empty()) {
      // Not app.help(), which shows the help of the subcommand parsed: this one.
      std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
      return;
    }
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->check_name(*name) && !sub->get_group().empty()) {
        std::cout << sub->help(app.get_name());
        return;
      }
    }
    throw UsageError("help: unknown subcommand '" + *name +
                     "'; the subcommands are: " + subcommand_names(app));
  });
}

}  // namespace

CLI::Option* add_output_option(CLI::App* sub, std::string& output, const std::string& what) {
  return sub
      ->add_option("-o,--output", output,
                   what +
                       " to write; an existing file is replaced (written whole to a new file, "
                       "then renamed over it); - for standard output")
      ->required();
}

CLI::Option* add_format_option(CLI::App* sub, std::string& format,
                               const std::vector<std::string>& formats, const std::string& detail) {
  std::string names;
  for (const std::string& name : formats) names += (names.empty() ? "" : ", ") + name;
  format = formats.front();
  return sub
      ->add_option("--format", format,
                   "Output format: " + names + " (default " + formats.front() +
                       "); json: one document on standard output (docs/cli-json.md)" +
                       (detail.empty() ? "" : "; " + detail))
      ->check(CLI::IsMember(formats));
}

void takes_command_line(CLI::App* sub, std::vector<std::string>& command) {
  command_lines()[sub] = &command;
}

void prepare_command_line(CLI::App& app) {
  app.name("vramshim");  // not argv[0], a build path: the help's usage lines say "vramshim report"
  add_help_command(app);
  add_documentation_commands(app);
  app.footer(kAllExitStatuses);
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string footer = sub->get_footer();
    if (footer.find("Exit status:") != std::string::npos) continue;
    sub->footer(footer.empty() ? kExitStatus : footer + "\n" + kExitStatus);
  }
}

namespace {

// The chosen subcommand's exit status, as run_command_line describes it.
int run_subcommand(CLI::App& app, int argc, char** argv) {
  prepare_command_line(app);
  try {
    std::vector<std::string> words = split_command_line(app, argc, argv);
    std::vector<char*> parsed;
    for (std::string& w : words) parsed.push_back(w.data());
    app.parse(static_cast<int>(parsed.size()), parsed.data());
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all, --version
    return usage_error(app, e, argc, argv);
  } catch (const ExitStatus& status) {
    return status.code;
  } catch (const UsageError& e) {
    analyzer::print_diagnostic(e.what());
    return kUsageError;
  } catch (const std::exception& e) {
    analyzer::print_diagnostic(e.what());
    return 1;
  }
  return 0;
}

// `status`, or 1 with one "vramshim: standard output: ..." line when what the command wrote there
// did not all get written (a full disk, /dev/full): stdio keeps a write error to itself, and
// `vramshim stats --all --prometheus > f.$$ && mv f.$$ f.prom` must not install a cut file. A
// reader that closed its pipe (`| head`) is no error: SIGPIPE ends the program at the write, or,
// where SIGPIPE is ignored, EPIPE is passed over, as before. stdio drops what a failed write held,
// so the flush here may have nothing left to fail on: errno then is that of the last call that
// failed, the write's, as commands write their output last.
int with_standard_output_written(int status) {
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout);
  const int error = errno != 0 ? errno : EIO;
  if (!failed || error == EPIPE || status != 0) return status;
  analyzer::print_diagnostic(std::string("standard output: ") + std::strerror(error));
  return 1;
}

}  // namespace

int run_command_line(CLI::App& app, int argc, char** argv) {
  return with_standard_output_written(run_subcommand(app, argc, argv));
}

namespace {
rlimit given_open_file_limit{};
bool open_file_limit_raised = false;
}  // namespace

void raise_open_file_limit() {
  if (::getrlimit(RLIMIT_NOFILE, &given_open_file_limit) != 0 ||
      given_open_file_limit.rlim_cur >= given_open_file_limit.rlim_max) {
    return;
  }
  rlimit raised = given_open_file_limit;
  raised.rlim_cur = raised.rlim_max;
  open_file_limit_raised = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
}

void restore_open_file_limit() {
  if (open_file_limit_raised) ::setrlimit(RLIMIT_NOFILE, &given_open_file_limit);
}

}  // namespace vramshim::cli
