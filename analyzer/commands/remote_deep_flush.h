// `flush --deep` for a Python process started without the shim: the frameworks' own release
// (torch.cuda.empty_cache(), CuPy's pool) runs inside it through the interpreter's remote
// execution (PEP 768: sys.remote_exec, Python 3.14 and newer). There is no shim pool to flush.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>

namespace vramshim::cli {

struct RemoteFlushResult {
  std::string python;  // the interpreter that ran sys.remote_exec
  // One object per framework, as the shim answers a deep flush ("frameworks"): "step", "outcome"
  // (ran, skipped, failed), "detail", "released_bytes" (what the framework's own figures say it
  // let go).
  nlohmann::json frameworks = nlohmann::json::array();
};

// The Python version pid runs ("3.14"), read from its executable's name or the libpython it maps;
// empty when it runs no Python that can be told.
std::string python_version_of(pid_t pid);

// Runs the release inside `pid` and waits (up to 10 s) for what each step did. Throws
// std::runtime_error with one line saying what could not be done: the process runs no Python or
// one older than 3.14, no Python 3.14+ interpreter is found to ask it (its own executable, else
// python3.14 and later on PATH), the interpreter refuses (permission: another user, ptrace_scope;
// remote debugging disabled in the target), or the target has not run the script in time (it runs
// it at its next Python bytecode).
RemoteFlushResult remote_deep_flush(pid_t pid);

}  // namespace vramshim::cli
