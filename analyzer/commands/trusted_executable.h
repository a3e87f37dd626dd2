// Which program root may run on another user's behalf, and which library it may preload into a job:
// one no other user could have put there nor swap afterwards.
#pragma once

#include <optional>
#include <string>

namespace vramshim::cli {

// The resolved path of `path` (symbolic links followed) when it is an executable regular file and
// it and every directory above it belong to root or to us and are writable by no one else (or are
// sticky directories such as /tmp), so no other user can change what the path names between this
// check and running it; else nullopt.
std::optional<std::string> trusted_executable(const std::string& path);

// The same for any regular file, executable or not (a shared library installed 0644).
std::optional<std::string> trusted_file(const std::string& path);

}  // namespace vramshim::cli
