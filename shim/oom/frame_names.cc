#include "shim/oom/frame_names.h"

#include <errno.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "shim/report/dynamic_symbols.h"

namespace vramshim::oom {
namespace {

struct Lookup {
  const std::vector<uint64_t>* frames;  // sorted, unique
  std::unordered_map<uint64_t, FrameName>* names;
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
  std::optional<report::DynamicSymbols> symbols;  // read once the object holds a frame
  const char* module = info.dlpi_name != nullptr ? info.dlpi_name : "";
  // The program's own name: dladdr's, as the loader's is empty.
  if (module[0] == '\0') module = program_invocation_name != nullptr ? program_invocation_name : "";
  for (const Pages& segment : segments) {
    // The frames whose call (the byte before the return address) lies in the segment.
    auto frame = std::upper_bound(lookup.frames->begin(), lookup.frames->end(), segment.begin);
    for (; frame != lookup.frames->end() && *frame - 1 < segment.end; ++frame) {
      if (lookup.names->count(*frame) != 0) continue;  // a segment before it held it
      if (!symbols) symbols.emplace(info);
      FrameName name;
      name.module = module;
      name.base = base;
      if (const char* symbol = symbols->name_of(*frame - 1)) name.symbol = std::string(symbol);
      lookup.names->emplace(*frame, std::move(name));
    }
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
  Lookup lookup{&frames, &names_, page > 0 ? static_cast<uint64_t>(page) : 4096, false};
  dl_iterate_phdr(name_frames_of, &lookup);
}

const FrameName* FrameNames::find(uint64_t frame) const {
  const auto it = names_.find(frame);
  return it != names_.end() ? &it->second : nullptr;
}

}  // namespace vramshim::oom
