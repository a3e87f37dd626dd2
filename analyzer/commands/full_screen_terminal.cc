#include "analyzer/commands/full_screen_terminal.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

// Alone in this file: <term.h> defines a macro for every terminfo capability (lines, columns...).
#include <curses.h>
#include <term.h>

namespace vramshim::cli {

std::string full_screen_problem() {
  const char* variable = std::getenv("TERM");
  const std::string name = variable != nullptr ? variable : "";
  if (name.empty()) return "TERM is not set";
  const std::string term = "TERM=" + name;
  int status = 0;
  if (setupterm(name.c_str(), STDOUT_FILENO, &status) != OK) {
    if (status == 1) return term + " is a hardcopy terminal";
    if (status == 0) return term + " has no terminfo entry here";
    return "no terminfo database was found for " + term;
  }
  // Without cursor addressing ncurses cannot place a line: the screen would be garbage.
  const char* cup = tigetstr("cup");
  const bool addressable = cup != nullptr && cup != reinterpret_cast<char*>(-1);
  del_curterm(cur_term);  // newterm() reads the entry again for the screen
  if (!addressable) return term + " cannot move the cursor (its terminfo entry has no cup)";
  return {};
}

}  // namespace vramshim::cli
