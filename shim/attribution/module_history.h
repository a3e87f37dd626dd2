// Every load of an ELF object the process has had while stacks were interned, so that a frame keeps
// the module that mapped it when it was first seen, after that module is unloaded (dlclose) and
// another is loaded at its addresses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "shim/report/module_map.h"

namespace vramshim::attribution {

// Not thread-safe: its owner serializes every call (the stack table's intern mutex).
class ModuleHistory {
 public:
  // Brings the map of loaded objects up to date, appending the loads not seen before. Costs one
  // step of dl_iterate_phdr while nothing was loaded or unloaded since the last call, else one
  // walk of the loaded objects, whatever the number of loads seen before.
  void refresh();

  // The index in loads() of the object mapping `address` at the last refresh, or -1.
  int32_t module_of(uint64_t address) const;

  // Every load seen, in the order first seen; an index is never reused.
  const std::vector<report::LoadedModule>& loads() const { return loads_; }

  // Whether load `index` was still mapped at the last refresh.
  bool is_loaded(uint32_t index) const { return index < loaded_.size() && loaded_[index]; }

  // Host memory the loads seen hold, with their index: what a distinct load costs.
  size_t memory_bytes() const { return memory_bytes_; }

  // Loads compared with a mapped object at the last refresh that read the map: about one per
  // mapped object, however many loads were seen before (tests check it).
  size_t last_refresh_comparisons() const { return last_refresh_comparisons_; }

 private:
  // The index in loads_ of `module`'s load, appending it when it is new.
  uint32_t load_index(const report::LoadedModule& module);
  // No load is mapped any more, as far as is_loaded and load_of_mapped_ know.
  void forget_mapped();

  std::vector<report::LoadedModule> loads_;
  // Loads by a hash of what same_load compares: a refresh costs the mapped objects, not the loads
  // seen since the process started (a library dlopened at a new address each time adds one).
  std::unordered_multimap<size_t, uint32_t> load_by_identity_;
  std::vector<bool> loaded_;  // by index in loads_
  report::ModuleMap map_;
  std::vector<uint32_t> load_of_mapped_;  // map_.modules()[i] is loads_[load_of_mapped_[i]]
  size_t memory_bytes_ = 0;
  size_t last_refresh_comparisons_ = 0;
};

}  // namespace vramshim::attribution
