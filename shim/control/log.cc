#include "shim/control/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "shim/support/deferred_cancellation.h"
#include "shim/support/write_without_sigpipe.h"

namespace vramshim::control {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};

constexpr size_t kLineBytes = 1024;  // the prefix, the message and the newline
constexpr char kPrefix[] = "vramshim: ";

// One line, whatever it quotes (a report path or a socket path may hold a newline or an escape):
// C0 controls but tab, DEL, and the C1 controls (U+0080-U+009F in UTF-8, and bytes 0x80-0x9F
// outside a UTF-8 character, which 8-bit terminals act on) become '?'.
void show_controls_safely(char* text, size_t size) {
  size_t continuation = 0;  // bytes the current UTF-8 character still has
  for (size_t i = 0; i < size; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (continuation > 0 && (byte & 0xC0) == 0x80) {
      --continuation;
      continue;
    }
    continuation = 0;
    if (byte == 0xC2 && i + 1 < size && static_cast<unsigned char>(text[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(text[i + 1]) >= 0x80) {
      text[i] = text[i + 1] = '?';  // U+0080-U+009F
      ++i;
    } else if (byte >= 0xC2 && byte <= 0xF4) {
      continuation = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : 1;
    } else if ((byte < 0x20 && byte != '\t') || byte == 0x7f || (byte >= 0x80 && byte <= 0x9F)) {
      text[i] = '?';
    }
  }
}

}  // namespace

void set_log_level(LogLevel level) {
  g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void log(LogLevel level, const char* format, ...) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  const int saved_errno = errno;
  char line[kLineBytes];
  std::memcpy(line, kPrefix, sizeof(kPrefix) - 1);
  size_t used = sizeof(kPrefix) - 1;
  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(line + used, sizeof(line) - used - 1, format, args);
  va_end(args);
  if (written > 0) used += std::min<size_t>(static_cast<size_t>(written), sizeof(line) - used - 2);
  show_controls_safely(line + sizeof(kPrefix) - 1, used - (sizeof(kPrefix) - 1));
  line[used++] = '\n';
  // write(2) is a cancellation point, and the shim logs in the middle of its work.
  const support::DeferredCancellation deferred;
  ssize_t ignored = support::write_without_sigpipe(STDERR_FILENO, line, used);
  (void)ignored;
  errno = saved_errno;
}

void log_items(LogLevel level, const char* prefix, const std::vector<std::string>& items) {
  if (static_cast<int>(level) > g_level.load(std::memory_order_relaxed)) return;
  // What fits after "vramshim: " and before the newline.
  constexpr size_t kMessageBytes = kLineBytes - (sizeof(kPrefix) - 1) - 2;
  std::string message = prefix;
  bool has_items = false;
  for (const std::string& item : items) {
    if (has_items && message.size() + 1 + item.size() > kMessageBytes) {
      log(level, "%s", message.c_str());
      message = prefix;
      has_items = false;
    }
    message += ' ';
    message += item;
    has_items = true;
  }
  log(level, "%s", message.c_str());
}

}  // namespace vramshim::control
