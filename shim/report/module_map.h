// The loaded ELF objects of this process, so frames can be written as module + offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramshim::report {

// One PT_LOAD program header as the loader mapped it: what identifies the file of a module without
// a build-id (a rebuilt binary moves or resizes its segments).
struct LoadSegment {
  uint64_t vaddr;
  uint64_t memsz;
  uint64_t filesz;
  uint64_t offset;

  bool operator==(const LoadSegment& other) const {
    return vaddr == other.vaddr && memsz == other.memsz && filesz == other.filesz &&
           offset == other.offset;
  }
};

struct LoadedModule {
  std::string path;      // absolute path of the mapped file, without the kernel's " (deleted)"
  bool deleted = false;  // the file at `path` was deleted or replaced since it was mapped
  uint64_t base = 0;     // load bias: an address minus base is the ELF virtual address
  uint64_t begin = 0;    // lowest address of its PT_LOAD segments
  uint64_t end = 0;      // one past the highest
  std::string build_id;  // GNU build-id in lowercase hex, "" if the object has none
  std::vector<LoadSegment> segments;
  std::string loader_name;  // the loader's name for it (maybe relative, "" for the executable)

  // Whether `other` is this very load: the same object named alike at the same addresses.
  bool same_load(const LoadedModule& other) const {
    return base == other.base && begin == other.begin && end == other.end &&
           loader_name == other.loader_name && build_id == other.build_id;
  }
};

// The loader's counts of objects loaded and unloaded so far: while they stay the same, so do the
// loaded objects.
struct LoaderCounts {
  uint64_t adds = 0;
  uint64_t subs = 0;
  bool known = false;  // false: this libc does not count, the map must be read again

  bool same_as(const LoaderCounts& other) const {
    return known && other.known && adds == other.adds && subs == other.subs;
  }
  // Takes the loader's lock and reads the first object only.
  static LoaderCounts now();
};

class ModuleMap {
 public:
  // Walks dl_iterate_phdr (it takes the loader's lock: not for hot paths); reads /proc/self/maps
  // when an object was loaded by a relative name.
  static ModuleMap of_this_process();

  const std::vector<LoadedModule>& modules() const { return modules_; }
  // The loader's counts when the map was read.
  const LoaderCounts& counts() const { return counts_; }

  // Index in modules() of the object mapping `address`, or -1.
  int module_of(uint64_t address) const;

 private:
  std::vector<LoadedModule> modules_;
  std::vector<int> by_begin_;  // indices into modules_ sorted by begin
  LoaderCounts counts_;
};

}  // namespace vramshim::report
