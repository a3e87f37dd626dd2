// Resolves module + offset to functions, source lines and inlined frames with elfutils libdw.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyzer/model/report.h"

namespace vramshim::analyzer {

// One function activation at an address. An address inside inlined code yields several, innermost
// first; all but the last are inlined into the one after them.
struct SourceFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // empty when the binary has no line information there
  int64_t line = 0;
  bool inlined = false;
};

class Symbolizer {
 public:
  // Problems (a binary that is missing, unreadable or rebuilt since the run) are reported once per
  // module: printed on `warnings` as they happen unless it is null, and kept for warnings(). A
  // module whose binary is missing or another has its symbols read from the debug file its build-id
  // names under `debug_root` (.build-id/xx/yyyy.debug).
  explicit Symbolizer(std::FILE* warnings = stderr, std::string debug_root = "/usr/lib/debug");
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Resolves a return address (`offset`: its ELF virtual address in the module, as FORMAT.md
  // records it): looks up offset - 1 so that the line of the call is found, not the line after it.
  // Empty when the module cannot be used; the caller then keeps module + offset.
  std::vector<SourceFrame> resolve_return_address(const Module& module, uint64_t offset);

  // Resolves an exact address (an ELF virtual address in the module).
  std::vector<SourceFrame> resolve(const Module& module, uint64_t offset);

  // Every warning so far, as "vramshim: …" lines without the newline.
  const std::vector<std::string>& warnings() const { return warning_lines_; }

  // How many times a file was loaded (read as an ELF file, usable or not) so far.
  size_t files_loaded() const { return by_file_.size(); }

 private:
  struct LoadedModule;
  LoadedModule* load(const Module& module);
  // `path` as the ELF of `module`, or null with the reason in *why (empty: told already). It must
  // have the module's build-id and, if `check_segments`, its PT_LOAD segments.
  LoadedModule* load_file(const Module& module, const std::string& path,
                          const std::string& identity, bool check_segments, std::string* why);
  std::string debug_file_of(const std::string& build_id) const;

  std::FILE* warnings_;
  std::string debug_root_;
  std::vector<std::string> warning_lines_;
  // Each binary loaded once, by the file it is (device, inode) and the build-id and segments the
  // report names (`identity`; a debug file found by build-id, by that build-id alone):
  // a report may spell one path many ways ("/./lib.so", "//lib.so"), and each load holds the
  // binary's debug information (2,000 spellings of one binary took 3.5 GB).
  using FileKey = std::tuple<dev_t, ino_t, std::string>;
  std::map<FileKey, std::unique_ptr<LoadedModule>> by_file_;
  // By path and build-id: the loaded module, or null for a module that cannot be used.
  std::unordered_map<std::string, LoadedModule*> by_path_;
};

// Demangles a C++ symbol name; returns the name unchanged when it is not a mangled name, or when
// its demangled form would pass 16 KiB (a few bytes of nested back-references can make gigabytes).
std::string demangle(const std::string& name);

}  // namespace vramshim::analyzer
