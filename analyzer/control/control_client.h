// The CLI's side of the control socket: finding a process's socket and asking it one request. It
// talks only to sockets in directories it trusts (SocketDirectory), served by the process the
// socket's name promises, running as our effective uid.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory.h"

namespace vramshim::cli {

// The directories processes of this user put their sockets in (README.md, "Control socket"), or
// just `only` if given.
std::vector<std::string> socket_directories(const std::string& only = {});

// The sockets of live processes in `directories`, ordered by pid. A socket whose process is gone
// (no such pid, or nobody accepts on the socket) is removed. A directory or socket that is not
// trusted is skipped with one "vramshim: …" line on stderr saying why.
std::vector<SocketEntry> live_sockets(const std::vector<std::string>& directories);

// The trusted socket of process `pid`. Throws "no vramshim socket for pid N (is it running under
// vramshim?)", or "no trusted vramshim socket for pid N: <why>" when the directory or the socket
// it would be in is not trusted.
SocketEntry socket_for_pid(pid_t pid);

// Thrown by ask() when the process that listens on a socket is not the one its name promises.
class UntrustedPeer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why the process serving the connected Unix socket `fd` (SO_PEERCRED) is not the one `socket`
// promises (pid socket.pid, uid socket.owner); empty if it is.
std::string peer_problem(int fd, const SocketEntry& socket);

// Sends `request` (a newline is added) and returns the parsed one-line answer. First checks the
// listening process (SO_PEERCRED): its pid must be socket.pid and its uid socket.owner, else
// throws UntrustedPeer. Throws std::runtime_error when the socket cannot be reached, the process
// does not answer within timeout_ms, or the answer is not JSON. A well-formed {"ok":false,…}
// answer is returned, not thrown: see require_ok.
nlohmann::json ask(const SocketEntry& socket, const std::string& request, int timeout_ms = 10000);

// Throws "pid N: <error>" unless answer["ok"] is true; returns the answer.
const nlohmann::json& require_ok(const nlohmann::json& answer, pid_t pid);

}  // namespace vramshim::cli
