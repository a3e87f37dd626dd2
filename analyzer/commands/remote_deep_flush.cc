#include "analyzer/commands/remote_deep_flush.h"

#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "analyzer/commands/path_search.h"
#include "analyzer/commands/trusted_executable.h"

extern char** environ;

namespace vramshim::cli {
namespace {

constexpr int kFirstRemoteExecMinor = 14;  // sys.remote_exec: Python 3.14 (PEP 768)
constexpr auto kResultTimeout = std::chrono::seconds(10);

// What runs inside the target, in its main thread at its next bytecode: each framework's release,
// with the bytes its own figures say it let go, written to RESULT (a temporary name, then a
// rename). Everything is local to one function, deleted afterwards, so that nothing is left in
// the target's __main__.
constexpr const char* kReleaseScript = R"PY(
def _vramshim_remote_flush(result_path):
    import json, os, sys
    steps = []

    def step(name, module_name, started, reserved, release):
        module = sys.modules.get(module_name)
        if module is None:
            steps.append({"step": name, "outcome": "skipped",
                          "detail": module_name + " is not imported", "released_bytes": 0})
            return
        try:
            if not started(module):
                steps.append({"step": name, "outcome": "skipped",
                              "detail": module_name + ".cuda is not initialized",
                              "released_bytes": 0})
                return
            before = reserved(module)
            release(module)
            steps.append({"step": name, "outcome": "ran", "detail": "",
                          "released_bytes": max(0, before - reserved(module))})
        except Exception as error:
            steps.append({"step": name, "outcome": "failed", "released_bytes": 0,
                          "detail": "%s: %s" % (type(error).__name__, error)})

    def torch_reserved(torch):
        return sum(torch.cuda.memory_reserved(d) for d in range(torch.cuda.device_count()))

    step("torch.cuda.empty_cache", "torch", lambda torch: torch.cuda.is_initialized(),
         torch_reserved, lambda torch: torch.cuda.empty_cache())
    step("cupy.get_default_memory_pool().free_all_blocks", "cupy", lambda cupy: True,
         lambda cupy: cupy.get_default_memory_pool().total_bytes(),
         lambda cupy: cupy.get_default_memory_pool().free_all_blocks())
    partial = result_path + ".partial"
    with open(partial, "w") as out:
        json.dump({"steps": steps}, out)
    os.replace(partial, result_path)


try:
    _vramshim_remote_flush(RESULT_PATH)
finally:
    del _vramshim_remote_flush
)PY";

std::string link_target(const std::string& path) {
  char target[PATH_MAX];
  const ssize_t length = ::readlink(path.c_str(), target, sizeof(target) - 1);
  if (length <= 0) return {};
  std::string text(target, static_cast<size_t>(length));
  static const std::string kDeleted = " (deleted)";
  if (text.size() > kDeleted.size() &&
      text.compare(text.size() - kDeleted.size(), kDeleted.size(), kDeleted) == 0) {
    text.resize(text.size() - kDeleted.size());
  }
  return text;
}

std::pair<int, int> version_numbers(const std::string& version) {
  const size_t dot = version.find('.');
  return {std::stoi(version.substr(0, dot)), std::stoi(version.substr(dot + 1))};
}

// An interpreter that has sys.remote_exec, of the target's version where there is one (the
// interface is not promised across versions): the target's own executable, else python3.N for the
// target's N on PATH, else python3.14 or later on PATH (absolute directories only; for root, only a
// file no other user could have put there, as trusted_executable says).
std::string remote_exec_interpreter(pid_t pid, const std::string& version) {
  const std::string own = link_target("/proc/" + std::to_string(pid) + "/exe");
  static const std::regex kInterpreterName(R"(python\d+\.\d+)");
  // Root runs the interpreter of any user's process only as a file that user could not have put
  // there, by a path that user cannot change before it runs.
  if (std::regex_match(std::filesystem::path(own).filename().string(), kInterpreterName)) {
    if (const std::optional<std::string> trusted = trusted_executable(own)) return *trusted;
  }
  const std::vector<std::string> path = absolute_path_directories();
  std::vector<std::string> names = {"python" + version};
  for (int minor = kFirstRemoteExecMinor; minor < kFirstRemoteExecMinor + 10; ++minor) {
    names.push_back("python3." + std::to_string(minor));
  }
  for (const std::string& name : names) {
    for (const std::string& directory : path) {
      const std::string candidate = directory + "/" + name;
      if (!is_executable_file(candidate)) continue;
      if (::geteuid() != 0) return candidate;
      if (const std::optional<std::string> trusted = trusted_executable(candidate)) return *trusted;
    }
  }
  throw std::runtime_error("pid " + std::to_string(pid) + " runs Python " + version +
                           ", but no Python 3.14 or newer is found to run sys.remote_exec from "
                           "(neither its own executable nor python3.14 or later on PATH)");
}

uid_t owner_of_process(pid_t pid) {
  struct stat info;
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &info) != 0) {
    throw std::runtime_error("no process " + std::to_string(pid));
  }
  return info.st_uid;
}

// A directory of our own for the script and its result, removed when done.
class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "vramshim-remote-flush-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("cannot create a temporary directory: " +
                               std::string(std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~ScratchDirectory() {
    if (keep_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::string& path() const { return path_; }

  // When root asks another user's process, the script runs as that user and writes its result
  // here: the directory becomes that user's, once what we write into it is written.
  void hand_to(uid_t owner) const {
    if (owner != ::geteuid() && ::chown(path_.c_str(), owner, static_cast<gid_t>(-1)) != 0) {
      throw std::runtime_error("cannot hand a temporary directory to uid " + std::to_string(owner) +
                               ": " + std::strerror(errno));
    }
  }
  // The target may still run the script later: leave it where it can read it.
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool keep_ = false;
};

void write_new_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool written = fd >= 0 && ::fchmod(fd, 0644) == 0 &&
                 ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) written = ::close(fd) == 0 && written;
  if (!written) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

// The steps the script reported, with the types print_frameworks expects.
nlohmann::json checked_steps(const std::string& text, pid_t pid) {
  const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
  nlohmann::json steps = nlohmann::json::array();
  if (parsed.is_object() && parsed.contains("steps") && parsed["steps"].is_array()) {
    for (const nlohmann::json& step : parsed["steps"]) {
      auto text_of = [&](const char* key) {
        return step.is_object() && step.contains(key) && step[key].is_string()
                   ? step[key].get<std::string>()
                   : std::string();
      };
      const bool has_bytes = step.is_object() && step.contains("released_bytes") &&
                             step["released_bytes"].is_number_unsigned();
      if (text_of("step").empty() || text_of("outcome").empty()) continue;
      steps.push_back(
          {{"step", text_of("step")},
           {"outcome", text_of("outcome")},
           {"detail", text_of("detail")},
           {"released_bytes", has_bytes ? step["released_bytes"].get<std::uint64_t>() : 0}});
    }
  }
  if (steps.empty()) {
    throw std::runtime_error("pid " + std::to_string(pid) + ": the release's result is not JSON");
  }
  return steps;
}

// Runs `python -c ...remote_exec...`; returns its exit status and the last line it wrote to stderr.
std::pair<int, std::string> run_remote_exec(const std::string& python, pid_t pid,
                                            const std::string& script) {
  int output[2];
  if (::pipe2(output, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output[1], STDERR_FILENO);
  std::string program = python, flag = "-c",
              code =
                  "import sys\n"
                  "if not hasattr(sys, 'remote_exec'):\n"
                  "    sys.exit('%d.%d has no sys.remote_exec' % sys.version_info[:2])\n"
                  "sys.remote_exec(int(sys.argv[1]), sys.argv[2])\n",
              target = std::to_string(pid), path = script;
  // As root, isolated (-I): no PYTHONPATH, user site-packages or current directory of someone
  // else's (su without -) takes part in what root runs.
  std::string isolated = "-I";
  std::vector<char*> argv = {program.data()};
  if (::geteuid() == 0) argv.push_back(isolated.data());
  argv.insert(argv.end(), {flag.data(), code.data(), target.data(), path.data(), nullptr});
  pid_t child = 0;
  const int error = ::posix_spawn(&child, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(output[1]);
  if (error != 0) {
    ::close(output[0]);
    throw std::runtime_error("cannot run " + python + ": " + std::strerror(error));
  }
  std::string errors;
  char buffer[4096];
  ssize_t got;
  while ((got = ::read(output[0], buffer, sizeof buffer)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    errors.append(buffer, static_cast<size_t>(got));
  }
  ::close(output[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  while (!errors.empty() && errors.back() == '\n') errors.pop_back();
  const std::string last_line = errors.substr(errors.rfind('\n') + 1);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), last_line};
}

// The result the script wrote, read without following a link and only if the target's uid wrote
// it; empty until then.
std::string read_result(const std::string& directory, uid_t target) {
  const int fd =
      ::open((directory + "/result.json").c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  constexpr size_t kMaxResult = size_t{1} << 20;
  struct stat info;
  std::string text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == target &&
      static_cast<size_t>(info.st_size) < kMaxResult) {
    char buffer[4096];
    ssize_t got;
    // Bounded also while the target keeps writing to it.
    while (text.size() < kMaxResult && (got = ::read(fd, buffer, sizeof buffer)) > 0)
      text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return text;
}

}  // namespace

std::string python_version_of(pid_t pid) {
  static const std::regex kExecutable(R"(python(\d+\.\d+))");
  const std::string executable =
      std::filesystem::path(link_target("/proc/" + std::to_string(pid) + "/exe")).filename();
  std::smatch found;
  if (std::regex_match(executable, found, kExecutable)) return found[1];
  // An interpreter embedded in another program, or one linked with its shared library.
  static const std::regex kLibrary(R"(/libpython(\d+\.\d+)[^/]*\.so)");
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  for (std::string line; std::getline(maps, line);) {
    if (std::regex_search(line, found, kLibrary)) return found[1];
  }
  return {};
}

RemoteFlushResult remote_deep_flush(pid_t pid) {
  const uid_t target = owner_of_process(pid);
  const std::string version = python_version_of(pid);
  if (version.empty()) {
    throw std::runtime_error("pid " + std::to_string(pid) +
                             " runs no Python that can be told, so its frameworks cannot be "
                             "reached without the shim");
  }
  const auto [major, minor] = version_numbers(version);
  if (major < 3 || (major == 3 && minor < kFirstRemoteExecMinor)) {
    throw std::runtime_error("pid " + std::to_string(pid) + " runs Python " + version +
                             ": reaching its frameworks without the shim needs Python 3.14 or "
                             "newer (sys.remote_exec); start it under the shim (vramshim run)");
  }
  RemoteFlushResult result;
  result.python = remote_exec_interpreter(pid, version);

  ScratchDirectory scratch;
  const std::string script = scratch.path() + "/release.py";
  write_new_file(script, "RESULT_PATH = " + nlohmann::json(scratch.path() + "/result.json").dump() +
                             "\n" + kReleaseScript);
  scratch.hand_to(target);
  const auto [status, error] = run_remote_exec(result.python, pid, script);
  if (status != 0) {
    const std::string hint =
        error.rfind("PermissionError", 0) == 0
            ? " (another user's process needs root, and kernel.yama.ptrace_scope may forbid it)"
            : "";
    throw std::runtime_error("pid " + std::to_string(pid) + ": " + result.python +
                             " could not hand it the release (sys.remote_exec): " +
                             (error.empty() ? "exit status " + std::to_string(status) : error) +
                             hint);
  }
  const auto deadline = std::chrono::steady_clock::now() + kResultTimeout;
  std::string text;
  while ((text = read_result(scratch.path(), target)).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (text.empty()) {
    scratch.keep();
    throw std::runtime_error("pid " + std::to_string(pid) + " has not run the release within " +
                             std::to_string(kResultTimeout.count()) +
                             " s (a process runs it at its next Python bytecode; it stays in " +
                             scratch.path() + ")");
  }
  result.frameworks = checked_steps(text, pid);
  return result;
}

}  // namespace vramshim::cli
