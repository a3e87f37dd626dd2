// The CLI's side of the control socket: finding a process's socket and asking it one request.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vramshim::cli {

// A control socket found in a socket directory, named PID.sock.
struct SocketEntry {
  pid_t pid;
  std::string path;
};

// The directories processes of this user put their sockets in (DESIGN.md §2), or just `only` if
// given.
std::vector<std::string> socket_directories(const std::string& only = {});

// Every PID.sock in `directories`, ordered by pid.
std::vector<SocketEntry> list_sockets(const std::vector<std::string>& directories);

// The socket of process `pid`; throws "no vramshim socket for pid N (is it running under
// vramshim?)".
std::string socket_for_pid(pid_t pid);

// Sends `request` (a newline is added) and returns the parsed one-line answer. Throws
// std::runtime_error when the socket cannot be reached, the process does not answer within
// timeout_ms, or the answer is not JSON. A well-formed {"ok":false,…} answer is returned, not
// thrown: see require_ok.
nlohmann::json ask(const std::string& socket_path, const std::string& request,
                   int timeout_ms = 10000);

// Throws "pid N: <error>" unless answer["ok"] is true; returns the answer.
const nlohmann::json& require_ok(const nlohmann::json& answer, pid_t pid);

// Whether the process that owned a socket is gone: no such pid, or nobody accepts on the socket.
bool socket_is_stale(const SocketEntry& entry);

}  // namespace vramshim::cli
