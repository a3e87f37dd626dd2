#include "shim/oom/frame_names.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "shim/report/dynamic_symbols.h"

namespace vramshim::oom {
namespace {

// Reading an object's symbol table costs about 11 ms per 100,000 symbols, dladdr about 0.4 ms per
// address in such a table: an object holding at most this many of the frames is asked of dladdr.
constexpr size_t kFramesForTable = 24;

struct Lookup {
  const std::vector<uint64_t>* frames;  // sorted, unique
  std::unordered_map<uint64_t, FrameName>* names;
  std::vector<uint64_t>* for_dladdr;  // named, but their symbol to be asked of dladdr
  uint64_t page;
  bool failed;
};

// The object's pages as the loader mapped them: its first PT_LOAD segment's page is dli_fbase.
struct Pages {
  uint64_t begin;
  uint64_t end;
};

// Names the frames the object `info` describes holds, as dladdr would.
void name_object(const dl_phdr_info& info, Lookup& lookup) {
  std::vector<Pages> segments;
  uint64_t base = UINT64_MAX;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info.dlpi_phdr[i];
    if (header.p_type != PT_LOAD) continue;
    const uint64_t begin = (info.dlpi_addr + header.p_vaddr) & ~(lookup.page - 1);
    const uint64_t end =
        (info.dlpi_addr + header.p_vaddr + header.p_memsz + lookup.page - 1) & ~(lookup.page - 1);
    segments.push_back({begin, end});
    base = std::min(base, begin);
  }
  // The frames whose call (the byte before the return address) lies in a segment of the object.
  std::vector<uint64_t> held;
  for (const Pages& segment : segments) {
    auto frame = std::upper_bound(lookup.frames->begin(), lookup.frames->end(), segment.begin);
    for (; frame != lookup.frames->end() && *frame - 1 < segment.end; ++frame) {
      if (lookup.names->count(*frame) == 0) held.push_back(*frame);
    }
  }
  if (held.empty()) return;
  const char* module = info.dlpi_name != nullptr ? info.dlpi_name : "";
  // The program's own name: dladdr's, as the loader's is empty.
  if (module[0] == '\0') module = program_invocation_name != nullptr ? program_invocation_name : "";
  std::optional<report::DynamicSymbols> symbols;
  if (held.size() > kFramesForTable) symbols.emplace(info);
  for (const uint64_t frame : held) {
    FrameName name;
    name.module = module;
    name.base = base;
    if (symbols) {
      if (const char* symbol = symbols->name_of(frame - 1)) name.symbol = std::string(symbol);
    } else {
      lookup.for_dladdr->push_back(frame);
    }
    lookup.names->emplace(frame, std::move(name));
  }
}

int name_frames_of(dl_phdr_info* info, size_t, void* data) noexcept {
  Lookup& lookup = *static_cast<Lookup*>(data);
  // Nothing may unwind through the loader: out of host memory, the walk stops here.
  try {
    name_object(*info, lookup);
  } catch (...) {
    lookup.failed = true;
    return 1;
  }
  return 0;
}

}  // namespace

FrameNames::FrameNames(std::vector<uint64_t> frames) noexcept {
  frames.erase(std::remove(frames.begin(), frames.end(), uint64_t{0}), frames.end());
  std::sort(frames.begin(), frames.end());
  frames.erase(std::unique(frames.begin(), frames.end()), frames.end());
  if (frames.empty()) return;
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<uint64_t> for_dladdr;
  Lookup lookup{&frames, &names_, &for_dladdr, page > 0 ? static_cast<uint64_t>(page) : 4096,
                false};
  dl_iterate_phdr(name_frames_of, &lookup);
  // After the walk: dladdr takes the loader's lock too. An object unloaded meanwhile (dladdr then
  // answers another object, or none) leaves its frames without a symbol.
  try {
    for (const uint64_t frame : for_dladdr) {
      Dl_info info{};
      FrameName& name = names_.at(frame);
      if (dladdr(reinterpret_cast<void*>(frame - 1), &info) != 0 && info.dli_sname != nullptr &&
          reinterpret_cast<uint64_t>(info.dli_fbase) == name.base) {
        name.symbol = info.dli_sname;
      }
    }
  } catch (...) {
    // Out of host memory: the frames not named yet stay without a symbol.
  }
}

const FrameName* FrameNames::find(uint64_t frame) const {
  const auto it = names_.find(frame);
  return it != names_.end() ? &it->second : nullptr;
}

}  // namespace vramshim::oom
