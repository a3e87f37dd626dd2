// Where the processes running under the shim on this node are: the trusted sockets of this user's
// socket directories, and, for root, those of every user's.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory.h"

namespace vramshim::live {

// The sockets of processes running under the shim, ordered by pid: in `only_directory` if it is not
// empty, else in this user's socket directories (README.md, "Control socket") and, when the
// effective uid is root, in every user's (/run/user/UID/vramshim, /tmp/vramshim-UID,
// /tmp/vramshim-UID.XXXXXX), each trusted only for the uid its name gives. Nothing is removed; what
// is not trusted is left out with one line in *refused saying why. At most
// SocketDirectory::kMaxListed names PID.sock are looked at for one uid: the uids whose directories
// hold more go into *cut (if given), with a line in *refused.
std::vector<cli::SocketEntry> shimmed_sockets(const std::string& only_directory,
                                              std::vector<std::string>* refused,
                                              std::set<uid_t>* cut = nullptr);

}  // namespace vramshim::live
