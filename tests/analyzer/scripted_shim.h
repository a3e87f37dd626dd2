// A stand-in for a process under the shim that answers what a test scripts, hostile answers
// included: a child process serving DIRECTORY/PID.sock under its own pid, so that the CLI's checks
// (a private directory, a socket of this uid, SO_PEERCRED) pass and only the answers are wrong.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace vramshim::testing {

class ScriptedShim {
 public:
  // Serves DIRECTORY/PID.sock once started (the constructor returns when it listens): answers a
  // request with answers[its first word] and a newline, any other request with an error answer.
  ScriptedShim(const std::string& directory, std::map<std::string, std::string> answers);
  ~ScriptedShim();  // kills it
  ScriptedShim(const ScriptedShim&) = delete;
  ScriptedShim& operator=(const ScriptedShim&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& path() const { return path_; }

  // Stops it (SIGSTOP) and fills its listen backlog, as a stopped process's is once clients came:
  // a connection is then neither accepted nor refused.
  void stop_with_full_backlog();

 private:
  pid_t pid_ = -1;
  std::string path_;
  std::vector<int> waiting_clients_;  // the connections that fill the backlog
};

}  // namespace vramshim::testing
