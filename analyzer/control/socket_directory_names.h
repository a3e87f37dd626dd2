// How socket directories are named after the user whose sockets they hold (README.md, "Control
// socket"): /run/user/UID/vramshim, /tmp/vramshim-UID, and /tmp/vramshim-UID.XXXXXX, a directory
// of a process's own when another user took /tmp/vramshim-UID first
// (control::make_fallback_socket_directory). A name only says which uid to check a directory for.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vramshim::cli {

// The uid `digits` spell as the shim spells one (std::to_string): decimal digits without a sign
// or a leading zero, at most 4294967294 ((uid_t)-1 is no user's); nullopt for any other text, so
// that each uid has one name. SSSD and Active Directory give out uids of ten digits.
std::optional<uid_t> uid_from_digits(std::string_view digits);

// The socket directories in /tmp as (path, the uid its name gives), by path: /tmp/vramshim-UID and
// /tmp/vramshim-UID.XXXXXX (six letters or digits, as mkdtemp makes them), of `only_uid` if given,
// else of every uid.
std::vector<std::pair<std::string, uid_t>> tmp_socket_directories(std::optional<uid_t> only_uid);

}  // namespace vramshim::cli
