#include "shim/report/module_map.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>

namespace vramshim::report {
namespace {

constexpr size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }

std::string read_build_id(const struct dl_phdr_info* info) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const auto* notes = reinterpret_cast<const unsigned char*>(info->dlpi_addr + segment.p_vaddr);
    size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= segment.p_memsz) {
      const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(notes + at);
      const size_t name_at = at + sizeof(ElfW(Nhdr));
      const size_t desc_at = name_at + align4(header->n_namesz);
      const size_t next = desc_at + align4(header->n_descsz);
      if (next > segment.p_memsz) break;
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::equal(notes + name_at, notes + name_at + 4, "GNU")) {
        std::string hex;
        hex.reserve(2 * header->n_descsz);
        for (size_t b = 0; b < header->n_descsz; ++b) {
          hex.push_back(kHex[notes[desc_at + b] >> 4]);
          hex.push_back(kHex[notes[desc_at + b] & 0xf]);
        }
        return hex;
      }
      at = next;
    }
  }
  return "";
}

std::string executable_path() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path));
  return length > 0 ? std::string(path, static_cast<size_t>(length)) : std::string();
}

int add_module(struct dl_phdr_info* info, size_t, void* data) {
  auto* modules = static_cast<std::vector<LoadedModule>*>(data);
  LoadedModule module{info->dlpi_name != nullptr ? info->dlpi_name : "", info->dlpi_addr,
                      UINT64_MAX, 0, read_build_id(info)};
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    module.begin = std::min<uint64_t>(module.begin, info->dlpi_addr + segment.p_vaddr);
    module.end =
        std::max<uint64_t>(module.end, info->dlpi_addr + segment.p_vaddr + segment.p_memsz);
  }
  if (module.begin >= module.end) return 0;
  // The loader names the main program "" (it is always the first object reported).
  if (module.path.empty() && modules->empty()) module.path = executable_path();
  modules->push_back(std::move(module));
  return 0;
}

}  // namespace

ModuleMap ModuleMap::of_this_process() {
  ModuleMap map;
  dl_iterate_phdr(add_module, &map.modules_);
  map.by_begin_.resize(map.modules_.size());
  for (size_t i = 0; i < map.by_begin_.size(); ++i) map.by_begin_[i] = static_cast<int>(i);
  std::sort(map.by_begin_.begin(), map.by_begin_.end(),
            [&](int a, int b) { return map.modules_[a].begin < map.modules_[b].begin; });
  return map;
}

int ModuleMap::module_of(uint64_t address) const {
  // The last module beginning at or below the address is the only candidate.
  const auto after =
      std::upper_bound(by_begin_.begin(), by_begin_.end(), address,
                       [&](uint64_t value, int index) { return value < modules_[index].begin; });
  if (after == by_begin_.begin()) return -1;
  const int candidate = *(after - 1);
  return address < modules_[candidate].end ? candidate : -1;
}

}  // namespace vramshim::report
