// Whether the process serving a connected control socket is the one the socket promises: the
// process named PID.sock, alive, running as the socket's owner.
#pragma once

#include <string>

#include "analyzer/control/socket_directory.h"

namespace vramshim::cli {

// Why the process serving the connected Unix socket `fd` is not the one `socket` promises (pid
// socket.pid, uid socket.owner); empty if it is. SO_PEERCRED names the process that called
// listen() as it was then: that must be socket.pid of uid socket.owner, still alive (SO_PEERPIDFD
// holds the process itself, not its pid, which the kernel may have given to any other process since
// the listener exited and handed its socket over) and still running as socket.owner
// (/proc/PID/status).
std::string peer_problem(int fd, const SocketEntry& socket);

}  // namespace vramshim::cli
