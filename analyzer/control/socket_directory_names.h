// How socket directories are named after the user whose sockets they hold (README.md, "Control
// socket"): /run/user/UID/vramshim, /tmp/vramshim-UID, and /tmp/vramshim-UID.XXXXXX, a directory
// of a process's own when another user took /tmp/vramshim-UID first
// (control::make_fallback_socket_directory), recognized by control::uid_of_tmp_socket_directory.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vramshim::cli {

// The socket directories in /tmp as (path, the uid its name gives), by path: /tmp/vramshim-UID and
// /tmp/vramshim-UID.XXXXXX (six letters or digits, as mkdtemp makes them), of `only_uid` if given,
// else of every uid.
std::vector<std::pair<std::string, uid_t>> tmp_socket_directories(std::optional<uid_t> only_uid);

}  // namespace vramshim::cli
