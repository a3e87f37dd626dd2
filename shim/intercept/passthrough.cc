#include "shim/intercept/passthrough.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <optional>

extern char** environ;

namespace vramshim::intercept {
namespace {

constexpr char kSwitchOn[] = "VRAMSHIM_DISABLE=1";

enum class Answer : int { kUnknown, kEnabled, kDisabled };
std::atomic<Answer> g_answer{Answer::kUnknown};

// Whether the process's initial environment holds VRAMSHIM_DISABLE=1 (its first definition of the
// name decides, as for getenv), read from /proc/self/environ without allocating; nothing when the
// file cannot be read.
std::optional<bool> disabled_in_initial_environment() {
  const int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  constexpr size_t kName = sizeof("VRAMSHIM_DISABLE=") - 1;
  constexpr size_t kEntry = sizeof(kSwitchOn) - 1;
  char entry[kEntry + 1];  // the leading bytes of the entry being read
  size_t length = 0;       // of the entry being read
  std::optional<bool> found;
  char buffer[4096];
  ssize_t got = 0;
  while (!found && (got = read(fd, buffer, sizeof(buffer))) > 0) {
    for (ssize_t i = 0; i < got && !found; ++i) {
      if (buffer[i] != '\0') {
        if (length < sizeof(entry)) entry[length] = buffer[i];
        ++length;
        continue;
      }
      if (length >= kName && std::memcmp(entry, kSwitchOn, kName) == 0) {
        found = length == kEntry && entry[kEntry - 1] == '1';
      }
      length = 0;
    }
  }
  close(fd);
  if (got < 0) return std::nullopt;
  return found.value_or(false);
}

}  // namespace

bool shim_disabled() {
  const Answer known = g_answer.load(std::memory_order_acquire);
  if (known != Answer::kUnknown) return known == Answer::kDisabled;
  std::optional<bool> disabled;
  if (environ != nullptr) {
    const char* value = std::getenv("VRAMSHIM_DISABLE");
    disabled = value != nullptr && std::strcmp(value, "1") == 0;
  } else {
    // Called before the C library set up the environment (from a preinit function, as
    // sanitizers' interceptors call dlsym): getenv would find nothing yet.
    disabled = disabled_in_initial_environment();
    if (!disabled.has_value()) return false;  // unreadable: ask again once environ is set
  }
  g_answer.store(*disabled ? Answer::kDisabled : Answer::kEnabled, std::memory_order_release);
  return *disabled;
}

}  // namespace vramshim::intercept
