// Which program root may run on another user's behalf, and which library it may preload into a job:
// one no other user could have put there nor swap afterwards.
#pragma once

#include <optional>
#include <string>

namespace vramshim::cli {

// The resolved path of `path` (symbolic links followed) when it is an executable regular file and
// it and every directory above it belong to root or to us and are writable by no one else (or are
// sticky directories such as /tmp), so no other user can change what the resolved path names
// between this check and running it; else nullopt.
std::optional<std::string> trusted_executable(const std::string& path);

// The same for any regular file, executable or not (a shared library installed 0644).
std::optional<std::string> trusted_file(const std::string& path);

// `path` made absolute and lexically normal, not resolved, when it names an executable regular file
// and every directory it passes through, every link it follows (and the directory holding it) and
// the file belong to root or to us, the directories and the file writable by no one else: for a
// program that must be run through its own name (a venv's python is a link that sees the venv only
// when started through it), which no other user may then point elsewhere.
std::optional<std::string> trusted_program_path(const std::string& path);

// As root: the resolved `path` when trusted_file (or, if `executable`, trusted_executable) accepts
// it, else throws a one-line error naming it. As any other user: `path` unchanged.
std::string trusted_as_root(const std::string& path, bool executable);

}  // namespace vramshim::cli
