// The names dladdr gives the frames of a report, found by binary searches over each loaded object's
// dynamic symbols read once: dladdr walks an object's whole symbol table for each address (a
// report of 100,000 frames in a library of 100,000 symbols took 53 s to write at exit).
#pragma once

#include <link.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace vramshim::report {

// One object's dynamic symbols, as glibc's dladdr considers them.
class DynamicSymbols {
 public:
  // Reads the symbols of the object `info` describes, from its memory: only while it stays
  // loaded (inside dl_iterate_phdr's callback). An object without them has none.
  explicit DynamicSymbols(const dl_phdr_info& info);

  // The name dladdr gives `address`: of the symbols that hold it (a sized one in its range, a
  // sizeless or undefined one at its value), the one with the highest value, the first in the
  // table among those; null when none. The text lives in the object.
  const char* name_of(uint64_t address) const;

 private:
  struct Symbol {
    uint64_t value = 0;  // an address
    uint64_t end = 0;    // past its last address; == value when it matches its value alone
    uint64_t reach = 0;  // the largest end of this symbol and all that sort before it
    uint32_t index = 0;  // in the table
    uint32_t name = 0;   // offset in the string table
  };
  std::vector<Symbol> symbols_;  // by value, the lowest index last among equal values
  const char* strings_ = nullptr;
};

// The frames of one load to name, with what the module map saw of it.
struct LoadFrames {
  std::string loader_name;                            // dl_phdr_info's dlpi_name
  uint64_t begin = 0;                                 // its PT_LOAD segments' lowest address
  uint64_t end = 0;                                   // … one past their highest
  std::vector<std::pair<uint32_t, uint64_t>> frames;  // (frame id, address)
};
// By load bias.
using FramesByLoad = std::unordered_map<uint64_t, LoadFrames>;

// names[frame id] = the name dladdr gives the frame's address, copied, for the frames of loads
// still there (the object at their load bias has their name and extent, and its segments hold the
// address: another object may have taken an unloaded one's place); the others are left alone.
// Holds the loader's lock (dl_iterate_phdr) while it reads the objects. Throws std::bad_alloc when
// host memory runs out.
void name_frames(const FramesByLoad& frames, std::vector<std::optional<std::string>>* names);

}  // namespace vramshim::report
