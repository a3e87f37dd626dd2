// Every load of an ELF object the process has had while stacks were interned, so that a frame keeps
// the module that mapped it when it was first seen, after that module is unloaded (dlclose) and
// another is loaded at its addresses.
#pragma once

#include <cstdint>
#include <vector>

#include "shim/report/module_map.h"

namespace vramshim::attribution {

// Not thread-safe: its owner serializes every call (the stack table's intern mutex).
class ModuleHistory {
 public:
  // Brings the map of loaded objects up to date, appending the loads not seen before. Costs one
  // step of dl_iterate_phdr while nothing was loaded or unloaded since the last call.
  void refresh();

  // The index in loads() of the object mapping `address` at the last refresh, or -1.
  int32_t module_of(uint64_t address) const;

  // Every load seen, in the order first seen; an index is never reused.
  const std::vector<report::LoadedModule>& loads() const { return loads_; }

  // Whether load `index` was still mapped at the last refresh.
  bool is_loaded(uint32_t index) const;

 private:
  std::vector<report::LoadedModule> loads_;
  report::ModuleMap map_;
  std::vector<uint32_t> load_of_mapped_;  // map_.modules()[i] is loads_[load_of_mapped_[i]]
};

}  // namespace vramshim::attribution
