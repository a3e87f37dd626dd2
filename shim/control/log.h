// The shim's stderr logger: one line per message, prefixed "vramshim: ", filtered by VRAMSHIM_LOG.
#pragma once

#include <string>
#include <vector>

namespace vramshim::control {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// The level below which messages are dropped; warn until the configuration sets it.
void set_log_level(LogLevel level);
LogLevel log_level();

// Formats with snprintf into a stack buffer (long messages are cut) and writes the line with one
// write(2), so concurrent lines do not interleave. Allocates nothing; not for hot paths all the
// same.
void log(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

// Logs `prefix` followed by `items`, space-separated, on as many lines as the line buffer needs; an
// item is never cut (one longer than a line is logged alone, cut). For long lists such as the call
// summary, which must stay parseable.
void log_items(LogLevel level, const char* prefix, const std::vector<std::string>& items);

}  // namespace vramshim::control
