// Where a process's control socket lives (README.md, VRAMSHIM_SOCKET); shared by the shim and the
// vramshim CLI.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramshim::control {

// "$XDG_RUNTIME_DIR/vramshim" when runtime_dir (the value of XDG_RUNTIME_DIR) is not empty, else
// "/tmp/vramshim-UID".
std::string default_socket_directory(const std::string& runtime_dir, uid_t uid);

// Every directory a process of this uid may have put its default socket in, the preferred one
// first: the XDG one (if runtime_dir is set) and the /tmp one.
std::vector<std::string> socket_directories(const std::string& runtime_dir, uid_t uid);

// Whether `directory`, whose status is `info`, may hold the control sockets of `uid`: a directory
// owned by `uid` with no group or other permission bits. `info` must come from lstat, or from fstat
// of a descriptor opened with O_NOFOLLOW, so that a link never passes for the directory it names.
// Returns an empty string if it may, else why not. The shim checks this before it creates its
// socket, the CLI before it trusts the sockets in a directory.
std::string verify_private_directory(const std::string& directory, const struct stat& info,
                                     uid_t uid);

// Makes `directory` ready to hold sockets: creates it with mode 0700 if missing (its parent must
// exist), else accepts it only if verify_private_directory does. Returns an empty string on
// success, else why it refused.
std::string prepare_private_directory(const std::string& directory, uid_t uid);

// The uid `digits` spell as the shim spells one (std::to_string): decimal digits without a sign
// or a leading zero, at most 4294967294 ((uid_t)-1 is no user's); nullopt for any other text, so
// that each uid has one name. SSSD and Active Directory give out uids of ten digits.
std::optional<uid_t> uid_from_digits(std::string_view digits);

// The uid a directory in /tmp is named for, as the shim names them: "vramshim-UID" (the default
// directory) or "vramshim-UID.XXXXXX" (make_fallback_socket_directory's, six letters or digits;
// *fallback, if given, says which); nullopt for any other name. A name only says which uid to
// check a directory for (verify_private_directory).
std::optional<uid_t> uid_of_tmp_socket_directory(std::string_view name, bool* fallback = nullptr);

// The directories /tmp/vramshim-UID.XXXXXX in `parent` ("/tmp" but in tests) that processes of
// `uid` made by make_fallback_socket_directory, by name only.
std::vector<std::string> fallback_socket_directories(uid_t uid, const std::string& parent = "/tmp");

// Makes a directory of this process's own for its socket, for when /tmp/vramshim-UID is not a
// private directory of `uid`: any user may make that name first, and a sticky /tmp lets nobody
// else remove it. The new one is /tmp/vramshim-UID.XXXXXX, made by mkdtemp (a name nobody can make
// first or guess), mode 0700; the CLI looks in every such directory of the uid. Returns its path,
// or an empty string with *error set.
std::string make_fallback_socket_directory(uid_t uid, std::string* error);

}  // namespace vramshim::control
