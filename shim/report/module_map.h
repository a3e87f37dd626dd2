// The loaded ELF objects of this process, so frames can be written as module + offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramshim::report {

struct LoadedModule {
  std::string path;      // as the loader names it; the executable as /proc/self/exe resolves
  uint64_t base;         // load bias: an address minus base is the ELF virtual address
  uint64_t begin;        // lowest address of its PT_LOAD segments
  uint64_t end;          // one past the highest
  std::string build_id;  // GNU build-id in lowercase hex, "" if the object has none
};

class ModuleMap {
 public:
  // Walks dl_iterate_phdr (it takes the loader's lock: not for hot paths).
  static ModuleMap of_this_process();

  const std::vector<LoadedModule>& modules() const { return modules_; }

  // Index in modules() of the object mapping `address`, or -1.
  int module_of(uint64_t address) const;

 private:
  std::vector<LoadedModule> modules_;
  std::vector<int> by_begin_;  // indices into modules_ sorted by begin
};

}  // namespace vramshim::report
