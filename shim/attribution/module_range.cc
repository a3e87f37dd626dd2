#include "shim/attribution/module_range.h"

#include <link.h>

namespace vramshim::attribution {
namespace {

struct RangeSearch {
  uintptr_t address;
  ModuleRange found;
};

int find_object_mapping(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<RangeSearch*>(data);
  ModuleRange range{UINTPTR_MAX, 0};
  bool maps_address = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    const uintptr_t stop = start + segment.p_memsz;
    if (start < range.begin) range.begin = start;
    if (stop > range.end) range.end = stop;
    if (search->address >= start && search->address < stop) maps_address = true;
  }
  if (!maps_address) return 0;
  search->found = range;
  return 1;
}

}  // namespace

ModuleRange ModuleRange::containing(const void* address) {
  RangeSearch search{reinterpret_cast<uintptr_t>(address), {}};
  dl_iterate_phdr(find_object_mapping, &search);
  return search.found;
}

ModuleRange ModuleRange::of_this_module() {
  return containing(reinterpret_cast<const void*>(&count_leading_frames_in));
}

int count_leading_frames_in(const uint64_t* frames, int count, ModuleRange module) {
  int skipped = 0;
  while (skipped < count && module.contains(frames[skipped])) ++skipped;
  return skipped;
}

}  // namespace vramshim::attribution
