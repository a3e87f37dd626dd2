// The temporary files outputs are written through must not outlive a CLI stopped while it writes,
// by Ctrl-C (SIGINT), kill (SIGTERM), a closed terminal (SIGHUP) or any other signal sent from
// outside whose default action ends the process (SIGQUIT, SIGUSR1/2, SIGALRM, SIGXCPU from ulimit
// -t, the real-time ones, …): while any such file is named here, a handler of those signals removes
// every one and then lets the signal end the process as it would have. A write past the limit on a
// file's size (ulimit -f) fails with EFBIG meanwhile, SIGXFSZ ignored, rather than ending the
// process. A signal the process ignores (nohup) or handles itself is left as it is.
#pragma once

#include <string>

namespace vramshim::analyzer {

class RemovedIfKilled {
 public:
  // `path` (a relative one against the working directory of the moment) is removed if one of those
  // signals ends the process before this is destroyed; name it before creating it, so
  // that no signal falls in between. Throws std::runtime_error("PATH: cannot write: …") when 8
  // files are already named, or `path` is too long to be a file's name.
  explicit RemovedIfKilled(const std::string& path);
  // Forgets the file; removing or renaming it is the caller's, before.
  ~RemovedIfKilled();
  RemovedIfKilled(const RemovedIfKilled&) = delete;
  RemovedIfKilled& operator=(const RemovedIfKilled&) = delete;

 private:
  size_t slot_;
};

}  // namespace vramshim::analyzer
