// Where a process's control socket lives (DESIGN.md §2); shared by the shim and the vramshim CLI.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace vramshim::control {

// "$XDG_RUNTIME_DIR/vramshim" when runtime_dir (the value of XDG_RUNTIME_DIR) is not empty, else
// "/tmp/vramshim-UID".
std::string default_socket_directory(const std::string& runtime_dir, uid_t uid);

// default_socket_directory(…) + "/PID.sock".
std::string default_socket_path(const std::string& runtime_dir, uid_t uid, pid_t pid);

// Every directory a process of this uid may have put its default socket in, the preferred one
// first: the XDG one (if runtime_dir is set) and the /tmp one.
std::vector<std::string> socket_directories(const std::string& runtime_dir, uid_t uid);

// Makes `directory` ready to hold sockets: creates it with mode 0700 if missing (its parent must
// exist), else accepts it only if it is a real directory (not a link) owned by `uid` with no group
// or other permission bits. Returns an empty string on success, else why it refused.
std::string prepare_private_directory(const std::string& directory, uid_t uid);

}  // namespace vramshim::control
