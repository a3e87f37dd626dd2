#include "analyzer/commands/shim_location.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "analyzer/commands/trusted_executable.h"

namespace vramshim::cli {
namespace {

bool is_file(const std::string& path) { return !path.empty() && ::access(path.c_str(), R_OK) == 0; }

// The dynamic loader splits LD_PRELOAD at ':' and at spaces (musl's at any white space): a shim at
// "/opt/my tools/libvramshim.so" would preload "/opt/my" and "tools/libvramshim.so", a path
// relative to the job's working directory, where another user may have put a library of theirs.
std::string preloadable(const std::string& shim) {
  if (shim.find_first_of(": \t\n\v\f\r") != std::string::npos) {
    throw std::runtime_error(shim +
                             " cannot be preloaded: LD_PRELOAD splits paths at ':' and white space "
                             "(name a copy at a path without them in VRAMSHIM_LIB)");
  }
  return shim;
}

// As root the shim goes into jobs run as root (run, jupyter, demo): a library another user could
// have planted or could swap would run as root. The path checked is the one preloaded.
std::string checked(const std::string& shim) {
  return preloadable(trusted_as_root(shim, /*executable=*/false));
}

}  // namespace

std::string directory_of_executable() {
  char path[PATH_MAX];
  const ssize_t length = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return ".";
  std::string executable(path, static_cast<size_t>(length));
  return executable.substr(0, executable.rfind('/'));
}

std::string find_shim() {
  if (const char* configured = std::getenv("VRAMSHIM_LIB"); configured != nullptr && *configured) {
    if (!is_file(configured)) {
      throw std::runtime_error(std::string("VRAMSHIM_LIB=") + configured +
                               " is not a readable file");
    }
    // Absolute: the loader looks a name without '/' up in the library path, and a relative path
    // from wherever the job has gone since. Links are kept (a kernelspec that names the link keeps
    // working when an upgrade moves it).
    return checked(std::filesystem::absolute(configured).string());
  }
  const std::string here = directory_of_executable();
  for (const std::string& candidate : {here + "/libvramshim.so", here + "/../lib/libvramshim.so",
                                       here + "/../shim/libvramshim.so"}) {
    if (is_file(candidate)) {
      char resolved[PATH_MAX];
      return checked(::realpath(candidate.c_str(), resolved) != nullptr ? resolved : candidate);
    }
  }
  throw std::runtime_error("cannot find libvramshim.so next to " + here + " (set VRAMSHIM_LIB)");
}

}  // namespace vramshim::cli
