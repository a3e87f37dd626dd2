#include "shim/report/module_map.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstddef>
#include <cstdio>

namespace vramshim::report {
namespace {

constexpr size_t align4(size_t n) { return (n + 3) & ~size_t{3}; }
constexpr char kDeleted[] = " (deleted)";

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

// Drops the " (deleted)" the kernel appends to the name of a file deleted (or replaced by a rename,
// as `make install` does) while mapped; returns whether there was one.
bool strip_deleted(std::string& path) {
  const size_t length = sizeof(kDeleted) - 1;
  if (path.size() <= length || path.compare(path.size() - length, length, kDeleted) != 0) {
    return false;
  }
  path.resize(path.size() - length);
  return true;
}

std::string executable_path() {
  char path[4096];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path));
  return length > 0 ? std::string(path, static_cast<size_t>(length)) : std::string();
}

std::string read_whole(const char* path) {
  std::string text;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[16384];
  for (;;) {
    const ssize_t got = read(fd, chunk, sizeof(chunk));
    if (got <= 0) break;
    text.append(chunk, static_cast<size_t>(got));
  }
  close(fd);
  return text;
}

// The file /proc/self/maps shows mapped at `address`, "" if none.
std::string mapped_file_at(const std::string& maps, uint64_t address) {
  size_t at = 0;
  while (at < maps.size()) {
    size_t end_of_line = maps.find('\n', at);
    if (end_of_line == std::string::npos) end_of_line = maps.size();
    const std::string line = maps.substr(at, end_of_line - at);
    at = end_of_line + 1;
    uint64_t start = 0, stop = 0;
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %*s %*s %*s %*s %n", &start, &stop,
                    &path_at) < 2 ||
        path_at == 0) {
      continue;
    }
    if (address >= start && address < stop && line[path_at] == '/') return line.substr(path_at);
  }
  return "";
}

struct Walk {
  std::vector<LoadedModule>* modules;
  LoaderCounts* counts;
  std::string maps;  // read once, when a relative name needs it
};

bool has_counts(size_t size) {
  return size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(dl_phdr_info::dlpi_subs);
}

int add_module(struct dl_phdr_info* info, size_t size, void* data) {
  auto* walk = static_cast<Walk*>(data);
  if (walk->modules->empty() && !walk->counts->known && has_counts(size)) {
    *walk->counts = {info->dlpi_adds, info->dlpi_subs, true};
  }
  LoadedModule module;
  module.loader_name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  module.base = info->dlpi_addr;
  module.begin = UINT64_MAX;
  module.build_id = read_build_id(info);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    module.begin = std::min<uint64_t>(module.begin, info->dlpi_addr + segment.p_vaddr);
    module.end =
        std::max<uint64_t>(module.end, info->dlpi_addr + segment.p_vaddr + segment.p_memsz);
    module.segments.push_back(
        {segment.p_vaddr, segment.p_memsz, segment.p_filesz, segment.p_offset});
  }
  if (module.begin >= module.end) return 0;
  if (module.loader_name.empty() && walk->modules->empty()) {
    // The loader names the main program "" (it is always the first object reported).
    module.path = executable_path();
  } else if (module.loader_name.find('/') != std::string::npos && module.loader_name[0] != '/') {
    // Relative to the directory current at dlopen ("./libplugin.so"), which means nothing to an
    // analyzer elsewhere. Names without a slash are the loader's own (linux-vdso.so.1).
    if (walk->maps.empty()) walk->maps = read_whole("/proc/self/maps");
    module.path = mapped_file_at(walk->maps, module.begin);
    if (module.path.empty()) module.path = module.loader_name;
  } else {
    module.path = module.loader_name;
  }
  module.deleted = strip_deleted(module.path);
  walk->modules->push_back(std::move(module));
  return 0;
}

int read_counts(struct dl_phdr_info* info, size_t size, void* data) {
  if (has_counts(size))
    *static_cast<LoaderCounts*>(data) = {info->dlpi_adds, info->dlpi_subs, true};
  return 1;  // the first object carries the counts: stop
}

}  // namespace

LoaderCounts LoaderCounts::now() {
  LoaderCounts counts;
  dl_iterate_phdr(read_counts, &counts);
  return counts;
}

ModuleMap ModuleMap::of_this_process() {
  ModuleMap map;
  Walk walk{&map.modules_, &map.counts_, {}};
  dl_iterate_phdr(add_module, &walk);
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
