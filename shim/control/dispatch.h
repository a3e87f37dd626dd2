// Turns one request line into one JSON response line by calling the command handler.
#pragma once

#include <string>
#include <string_view>

#include "shim/control/command_handler.h"

namespace vramshim::control {

// The response to `line` (no newline at either end). Always a JSON object with "ok"; failures carry
// "error". "ping" answers {"ok":true,"pid":N} without calling the handler.
std::string respond_to(std::string_view line, CommandHandler& handler);

// {"ok":false,"error":message}, for failures found before a request is parsed (size, timeout,
// peer).
std::string error_response(std::string_view message);

}  // namespace vramshim::control
