// Whether the terminal TERM names can show `vramshim top`'s full screen: ncurses' initscr() exits
// the program itself ("Error opening terminal") when TERM names no terminfo entry, and on one that
// cannot move the cursor (TERM=dumb) the screen is garbage.
#pragma once

#include <string>

namespace vramshim::cli {

// Why the terminal on standard output cannot show a full screen ("TERM is not set", "TERM=NAME has
// no terminfo entry here", "TERM=NAME cannot move the cursor", ...); empty when it can.
std::string full_screen_problem();

}  // namespace vramshim::cli
