// The CLI's side of the control socket: finding a process's socket and asking it one request. It
// talks only to sockets in directories it trusts (SocketDirectory), served by the process the
// socket's name promises, running as our effective uid.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzer/control/socket_directory.h"
#include "analyzer/control/socket_peer.h"

namespace vramshim::cli {

// The longest answer read from a socket; a longer one is refused as soon as this much came.
inline constexpr size_t kMaxAnswerBytes = size_t{16} << 20;

// The deepest nesting of arrays and objects accepted in an answer (the shim's are about 5 deep).
// Parsing does not recurse, but copying or printing a JSON value recurses once per level, so a
// deeper answer could overflow the stack of whatever reads it.
inline constexpr int kMaxAnswerDepth = 64;

// The most values (objects, arrays, strings, numbers…) accepted in an answer: parsed, each costs
// tens of bytes, so 16 MiB of "[{},{},…]" would take some 400 MB. The largest answer a shim gives
// (1,000 sites) holds under 10,000.
inline constexpr size_t kMaxAnswerValues = 100000;

// `line`, an answer, as a JSON object; else nullopt with *problem saying why, to follow "the
// answer": "is not a JSON object", "is nested deeper than N levels" (N: kMaxAnswerDepth), or
// "holds more than N values" (N: kMaxAnswerValues).
std::optional<nlohmann::json> parse_answer(const std::string& line, std::string* problem);

// Why `answer` is not a success: empty when its "ok" is true; else its "error" when that is a
// string (printable), "request failed" when it is not, or what is wrong with its "ok".
std::string answer_failure(const nlohmann::json& answer);

// Another process's text (an error, a command line) with its control characters as '?': printed
// on a terminal, it must not move the cursor, retitle the window or otherwise drive the terminal.
std::string printable(std::string text);

// The directories processes of this user put their sockets in (README.md, "Control socket"):
// $XDG_RUNTIME_DIR/vramshim, /tmp/vramshim-UID and every /tmp/vramshim-UID.XXXXXX; or just `only`
// if given.
std::vector<std::string> socket_directories(const std::string& only = {});

// Removes `entry` from `directory` (SocketDirectory::remove) if its process is gone: no such pid,
// nothing at its name, or nobody accepts on the socket; whether it did.
bool remove_if_stale(const SocketDirectory& directory, const SocketEntry& entry);

// The sockets of live processes in `directories`, ordered by pid. A socket whose process is gone
// is removed (remove_if_stale), and a directory whose listing was cut (SocketDirectory::kMaxListed)
// is listed again while that removes some. A directory or socket that is not trusted is skipped
// with one "vramshim: …" line on stderr saying why. *cut (if given) is set when a directory's
// listing stayed cut: processes may run whose sockets were not looked at.
std::vector<SocketEntry> live_sockets(const std::vector<std::string>& directories,
                                      bool* cut = nullptr);

// The trusted socket of process `pid`. Throws "no vramshim socket for pid N (is it running under
// vramshim?)", or "no trusted vramshim socket for pid N: <why>" when the directory or the socket
// it would be in is not trusted.
SocketEntry socket_for_pid(pid_t pid);

// Thrown by ask() when the process that listens on a socket is not the one its name promises, or
// the socket file is no longer the one that was checked.
class UntrustedPeer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Sends `request` (a newline is added) and returns the parsed one-line answer. Connects only to the
// socket file that was checked (CheckedSocketFile), then checks the listening process
// (peer_problem), else throws UntrustedPeer. Throws std::runtime_error when the socket cannot be
// reached, the process does not accept the connection and answer within timeout_ms (all told), or
// the answer is longer than kMaxAnswerBytes or is not one parse_answer takes. A well-formed
// {"ok":false,…} answer is returned, not thrown: see require_ok.
nlohmann::json ask(const SocketEntry& socket, const std::string& request, int timeout_ms = 10000);

// Throws "pid N: <answer_failure>" unless answer["ok"] is true; returns the answer.
const nlohmann::json& require_ok(const nlohmann::json& answer, pid_t pid);

}  // namespace vramshim::cli
