#include "shim/report/dynamic_symbols.h"

#include <elf.h>

#include <algorithm>
#include <iterator>
#include <new>

namespace vramshim::report {
namespace {

// The object's mapped memory, from its PT_LOAD segments.
struct Extent {
  uint64_t begin = UINT64_MAX;
  uint64_t end = 0;

  bool holds(uint64_t address, uint64_t bytes) const {
    return address >= begin && address <= end && bytes <= end - address;
  }
};

Extent extent_of(const dl_phdr_info& info) {
  Extent extent;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info.dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    extent.begin = std::min<uint64_t>(extent.begin, info.dlpi_addr + header.p_vaddr);
    extent.end = std::max<uint64_t>(extent.end, info.dlpi_addr + header.p_vaddr + header.p_memsz);
  }
  return extent;
}

// A pointer of the dynamic section: the loader relocates them in place, except where the section
// is read-only (the vDSO's); either way, one that points into the object. 0: the tag is absent
// (0 + the load bias would be the object's ELF header).
const void* pointer(uint64_t value, const dl_phdr_info& info, const Extent& extent,
                    uint64_t bytes) {
  if (value == 0) return nullptr;
  if (extent.holds(value, bytes)) return reinterpret_cast<const void*>(value);
  if (extent.holds(value + info.dlpi_addr, bytes)) {
    return reinterpret_cast<const void*>(value + info.dlpi_addr);
  }
  return nullptr;
}

// How many symbols the GNU hash table reaches: one past the end of its last chain (symbols
// before its symoffset are local or undefined, never looked up).
uint64_t gnu_hash_symbols(const uint32_t* table, const Extent& extent) {
  const uint32_t buckets = table[0];
  const uint32_t first = table[1];
  const uint32_t bloom_words = table[2];
  const auto* bucket = reinterpret_cast<const uint32_t*>(
      reinterpret_cast<const char*>(table + 4) + uint64_t{bloom_words} * sizeof(ElfW(Addr)));
  if (!extent.holds(reinterpret_cast<uint64_t>(bucket), uint64_t{buckets} * 4)) return 0;
  uint32_t last = 0;
  for (uint32_t b = 0; b < buckets; ++b) last = std::max(last, bucket[b]);
  if (last < first) return first;
  const uint32_t* chain = bucket + buckets;
  for (uint64_t index = last;; ++index) {
    const uint32_t* word = chain + (index - first);
    if (!extent.holds(reinterpret_cast<uint64_t>(word), 4)) return 0;
    if ((*word & 1) != 0) return index + 1;
  }
}

}  // namespace

DynamicSymbols::DynamicSymbols(const dl_phdr_info& info) {
  const Extent extent = extent_of(info);
  const ElfW(Dyn)* dynamic = nullptr;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info.dlpi_phdr[i];
    if (header.p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + header.p_vaddr);
    }
  }
  if (dynamic == nullptr || extent.begin >= extent.end) return;
  uint64_t symtab = 0, strtab = 0, strsz = 0, hash = 0, gnu_hash = 0;
  for (const ElfW(Dyn)* entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
    if (!extent.holds(reinterpret_cast<uint64_t>(entry + 1), sizeof *entry)) return;
    switch (entry->d_tag) {
      case DT_SYMTAB:
        symtab = entry->d_un.d_ptr;
        break;
      case DT_STRTAB:
        strtab = entry->d_un.d_ptr;
        break;
      case DT_STRSZ:
        strsz = entry->d_un.d_val;
        break;
      case DT_HASH:
        hash = entry->d_un.d_ptr;
        break;
      case DT_GNU_HASH:
        gnu_hash = entry->d_un.d_ptr;
        break;
      default:
        break;
    }
  }
  const auto* strings = static_cast<const char*>(pointer(strtab, info, extent, strsz));
  const auto* table = static_cast<const ElfW(Sym)*>(pointer(symtab, info, extent, 0));
  if (strings == nullptr || table == nullptr) return;
  // glibc's dladdr walks the GNU hash table's chains when there is one (no local symbol is in it),
  // else every global or weak symbol of the old hash table's.
  uint64_t first = 0, count = 0;
  bool any_binding = false;
  if (const auto* gnu = static_cast<const uint32_t*>(pointer(gnu_hash, info, extent, 16))) {
    first = gnu[1];
    count = gnu_hash_symbols(gnu, extent);
    any_binding = true;
  } else if (const auto* old = static_cast<const uint32_t*>(pointer(hash, info, extent, 8))) {
    count = old[1];  // nchain: the number of symbols
  } else {
    return;
  }
  if (count <= first ||
      !extent.holds(reinterpret_cast<uint64_t>(table + first), (count - first) * sizeof *table)) {
    return;
  }
  strings_ = strings;
  for (uint64_t i = first; i < count; ++i) {
    const ElfW(Sym)& symbol = table[i];
    const int binding = ELF64_ST_BIND(symbol.st_info);
    if (!any_binding && binding != STB_GLOBAL && binding != STB_WEAK) continue;
    if (ELF64_ST_TYPE(symbol.st_info) == STT_TLS || symbol.st_shndx == SHN_ABS) continue;
    if (symbol.st_shndx == SHN_UNDEF && symbol.st_value == 0) continue;
    if (symbol.st_name >= strsz) continue;
    const uint64_t value = info.dlpi_addr + symbol.st_value;
    symbols_.push_back({value, value + symbol.st_size, 0, static_cast<uint32_t>(i),
                        static_cast<uint32_t>(symbol.st_name)});
  }
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    return a.value != b.value ? a.value < b.value : a.index > b.index;
  });
  uint64_t reach = 0;
  for (Symbol& symbol : symbols_) {
    reach = std::max(reach, symbol.end);
    symbol.reach = reach;
  }
}

const char* DynamicSymbols::name_of(uint64_t address) const {
  auto after = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                                [](uint64_t a, const Symbol& symbol) { return a < symbol.value; });
  // Walking back visits higher values first, and the lower index first among equal ones.
  while (after != symbols_.begin()) {
    const Symbol& symbol = *std::prev(after);
    if (symbol.reach <= address && symbol.value != address) break;
    --after;
    if (symbol.value == address || address < symbol.end) return strings_ + symbol.name;
  }
  return nullptr;
}

namespace {

// Whether the object `info` describes is the load `load` names.
bool is_load(const dl_phdr_info& info, const LoadFrames& load) {
  const char* name = info.dlpi_name != nullptr ? info.dlpi_name : "";
  if (load.loader_name != name) return false;
  const Extent extent = extent_of(info);
  return extent.begin == load.begin && extent.end == load.end;
}

// Names the frames of `load`, the object `info` describes.
void name_load(const dl_phdr_info& info, const LoadFrames& load,
               std::vector<std::optional<std::string>>* names) {
  if (!is_load(info, load)) return;
  const DynamicSymbols symbols(info);
  for (const auto& [frame, address] : load.frames) {
    bool mapped = false;
    for (ElfW(Half) i = 0; i < info.dlpi_phnum && !mapped; ++i) {
      const ElfW(Phdr)& header = info.dlpi_phdr[i];
      mapped = header.p_type == PT_LOAD && address >= info.dlpi_addr + header.p_vaddr &&
               address - (info.dlpi_addr + header.p_vaddr) < header.p_memsz;
    }
    if (!mapped) continue;
    if (const char* name = symbols.name_of(address)) (*names)[frame] = std::string(name);
  }
}

struct Naming {
  const FramesByLoad* frames;
  std::vector<std::optional<std::string>>* names;
  bool failed;
};

int name_frames_of(dl_phdr_info* info, size_t, void* data) noexcept {
  Naming& naming = *static_cast<Naming*>(data);
  const auto load = naming.frames->find(info->dlpi_addr);
  if (load == naming.frames->end()) return 0;
  // Nothing may unwind through the loader: out of host memory, the walk stops here.
  try {
    name_load(*info, load->second, naming.names);
  } catch (...) {
    naming.failed = true;
    return 1;
  }
  return 0;
}

}  // namespace

void name_frames(const FramesByLoad& frames, std::vector<std::optional<std::string>>* names) {
  if (frames.empty()) return;
  Naming naming{&frames, names, false};
  dl_iterate_phdr(name_frames_of, &naming);
  if (naming.failed) throw std::bad_alloc();
}

}  // namespace vramshim::report
