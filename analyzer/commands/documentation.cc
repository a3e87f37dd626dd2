// The man page and the bash and zsh completions, generated from the help text of the registered
// subcommands (their descriptions, options and footers), so that they say what --help says.
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/commands/command.h"

namespace vramshim::cli {
namespace {

std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
  std::vector<const CLI::App*> subs;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (!sub->get_name().empty() && !sub->get_group().empty()) subs.push_back(sub);
  }
  return subs;
}

// "--top", "-o" and "--output", ... of an option; empty for a positional.
std::vector<std::string> flags_of(const CLI::Option& option) {
  std::vector<std::string> flags;
  for (const std::string& s : option.get_snames()) flags.push_back("-" + s);
  for (const std::string& l : option.get_lnames()) flags.push_back("--" + l);
  return flags;
}

// Text as roff: backslashes and dashes escaped, no line starting with a control character.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

// The options of `sub`; -h/--help and --help-all only where `with_help` (the program's own).
void write_man_options(std::ostream& out, const CLI::App& sub, bool with_help) {
  for (const CLI::Option* option : sub.get_options()) {
    if (!with_help && (option->check_lname("help") || option->check_lname("help-all"))) continue;
    const std::vector<std::string> flags = flags_of(*option);
    std::string head;
    if (flags.empty()) {
      head = "\\fI" + roff(option->get_name()) + "\\fR";
    } else {
      for (const std::string& flag : flags)
        head += (head.empty() ? "" : ", ") + ("\\fB" + roff(flag) + "\\fR");
      if (option->get_items_expected_max() > 0)
        head += " \\fI" + roff(option->get_type_name()) + "\\fR";
    }
    out << ".TP\n" << head << '\n' << roff(option->get_description()) << '\n';
  }
}

// "pooled, attributed GPU memory ..." of "vramshim: pooled, attributed GPU memory ...".
std::string summary_of(const std::string& description) {
  const size_t colon = description.find(": ");
  return colon == std::string::npos ? description : description.substr(colon + 2);
}

void write_man_page(std::ostream& out, const CLI::App& app) {
  out << ".TH VRAMSHIM 1 \"\" \"vramshim\" \"User Commands\"\n"
      << ".SH NAME\nvramshim \\- " << roff(summary_of(app.get_description()))
      << "\n.SH SYNOPSIS\n.B vramshim\n\\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n"
      << ".br\n.B vramshim\n\\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR\n"
      << ".SH DESCRIPTION\n"
      << "vramshim runs programs under the shim (libvramshim.so, preloaded), talks to the "
         "processes that run under it, and reads the reports they write. Every subcommand takes "
         "\\fB\\-\\-help\\fR; \\fBvramshim help\\fR \\fISUBCOMMAND\\fR says the same.\n"
      << ".SH OPTIONS\n";
  write_man_options(out, app, true);
  out << ".SH SUBCOMMANDS\n";
  for (const CLI::App* sub : visible_subcommands(app)) {
    out << ".SS \"vramshim " << roff(sub->get_name()) << "\"\n"
        << roff(sub->get_description()) << '\n';
    write_man_options(out, *sub, false);
    if (!sub->get_footer().empty()) out << ".PP\n.nf\n" << roff(sub->get_footer()) << "\n.fi\n";
  }
  out << ".SH \"EXIT STATUS\"\n.nf\n"
      << roff(app.get_footer()) << "\n.fi\n"
      << ".SH \"SEE ALSO\"\nREADME.md, docs/design.md and shim/report/FORMAT.md of the sources.\n";
}

std::string joined_flags(const CLI::App& sub) {
  std::string words;
  for (const CLI::Option* option : sub.get_options()) {
    for (const std::string& flag : flags_of(*option)) words += (words.empty() ? "" : " ") + flag;
  }
  return words;
}

void write_bash_completion(std::ostream& out, const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : visible_subcommands(app))
    names += (names.empty() ? "" : " ") + sub->get_name();
  out << "# bash completion for vramshim (vramshim completion bash)\n"
      << "_vramshim() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} sub= i\n"
      << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      << "    case ${COMP_WORDS[i]} in -*) ;; *) sub=${COMP_WORDS[i]}; break ;; esac\n"
      << "  done\n"
      << "  local words\n"
      << "  case $sub in\n"
      << "    '') words='" << names << " " << joined_flags(app) << "' ;;\n";
  for (const CLI::App* sub : visible_subcommands(app)) {
    out << "    " << sub->get_name() << ") words='" << joined_flags(*sub) << "' ;;\n";
  }
  out << "    *) words= ;;\n"
      << "  esac\n"
      << "  if [[ -z $sub || $cur == -* ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
      << "  else\n"
      << "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      << "  fi\n"
      << "}\n"
      << "complete -o default -F _vramshim vramshim\n";
}

// A description inside zsh's single-quoted _arguments specs: no quote, bracket or colon.
std::string zsh_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c == '[' || c == '(') {
      out += '{';
    } else if (c == ']' || c == ')') {
      out += '}';
    } else if (c == ':') {
      out += ';';
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

void write_zsh_options(std::ostream& out, const CLI::App& sub) {
  for (const CLI::Option* option : sub.get_options()) {
    const std::string takes_value =
        option->get_items_expected_max() > 0 ? ":" + zsh_text(option->get_type_name()) + ":" : "";
    for (const std::string& flag : flags_of(*option)) {
      out << " \\\n      '" << flag << "[" << zsh_text(option->get_description()) << "]"
          << takes_value << "'";
    }
  }
}

void write_zsh_completion(std::ostream& out, const CLI::App& app) {
  out << "#compdef vramshim\n# zsh completion for vramshim (vramshim completion zsh)\n"
      << "_vramshim() {\n  local -a subcommands\n  subcommands=(\n";
  for (const CLI::App* sub : visible_subcommands(app)) {
    out << "    '" << sub->get_name() << ":" << zsh_text(sub->get_description()) << "'\n";
  }
  out << "  )\n"
      << "  if (( CURRENT == 2 )); then\n"
      << "    _describe 'subcommand' subcommands\n"
      << "    return\n"
      << "  fi\n"
      << "  local sub=$words[2]\n"
      << "  shift words\n"
      << "  (( CURRENT-- ))\n"
      << "  case $sub in\n";
  for (const CLI::App* sub : visible_subcommands(app)) {
    out << "    " << sub->get_name() << ")\n      _arguments -s";
    write_zsh_options(out, *sub);
    out << " \\\n      '*:file:_files' ;;\n";
  }
  out << "  esac\n}\n_vramshim \"$@\"\n";
}

}  // namespace

void add_documentation_commands(CLI::App& app) {
  CLI::App* man = app.add_subcommand("man-page", "Print the man page, vramshim.1 (roff)");
  man->group("");  // for the build (//analyzer:man_page), not listed
  man->callback([&app] { write_man_page(std::cout, app); });

  auto shell = std::make_shared<std::string>();
  CLI::App* completion = app.add_subcommand(
      "completion", "Print the completion script of a shell: source <(vramshim completion bash)");
  completion->add_option("shell", *shell, "bash or zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([&app, shell] {
    if (*shell == "bash") {
      write_bash_completion(std::cout, app);
    } else {
      write_zsh_completion(std::cout, app);
    }
  });
}

}  // namespace vramshim::cli
