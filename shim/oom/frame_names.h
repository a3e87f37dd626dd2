// What dladdr says of many frames at once: their object, its base and their dynamic symbol, read
// in one pass over the loaded objects. dladdr walks an object's whole symbol table for each address
// it is asked about (about 0.4 ms in a library of 100,000 exported symbols such as libtorch's): the
// labels of an out-of-memory explanation or of a `sites` request asked it for each frame. An object
// holding many of the frames has its table read once (about 11 ms for 100,000 symbols); one holding
// a few is asked of dladdr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace vramshim::oom {

struct FrameName {
  // The object's file, as dladdr's dli_fname; the program's is its argv[0] as it started
  // (program_invocation_name: dladdr reads argv[0] as the program may have changed it since).
  std::string module;
  uint64_t base = 0;  // dladdr's dli_fbase: the start of the object's first mapped page
  std::optional<std::string> symbol;  // dladdr's dli_sname
};

class FrameNames {
 public:
  FrameNames() = default;
  // Looks up each frame (a return address: the call ends at the byte before it) of `frames`, under
  // the loader's lock (dl_iterate_phdr). Out of host memory, those not looked up yet stay unknown.
  explicit FrameNames(std::vector<uint64_t> frames) noexcept;

  // Null when no loaded object holds the frame, or it was not looked up.
  const FrameName* find(uint64_t frame) const;

 private:
  std::unordered_map<uint64_t, FrameName> names_;
};

}  // namespace vramshim::oom
