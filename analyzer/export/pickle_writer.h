// Writes a Python pickle of plain data (None, bool, int, float, str, list, tuple, dict), as
// `pickle.load` and PyTorch's memory viewer (torch/utils/viz/MemoryViz.js, whose own unpickler
// knows only protocols 2 to 4 and a subset of their opcodes) both read it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vramshim::analyzer {

// Values are written in order, as Python's pickler writes them: a container is opened, its items
// (a dict's keys and values alternately) are written, and it is closed. Only opcodes that
// MemoryViz.js reads are used (protocol 4's PROTO, no FRAME).
class PickleWriter {
 public:
  PickleWriter();

  void none();
  void boolean(bool value);
  void integer(int64_t value);
  void real(double value);
  // UTF-8 text; a byte sequence that is not UTF-8 is written as U+FFFD, as Python's
  // decode(errors="replace") would show it.
  void string(std::string_view text);

  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  void begin_tuple();
  void end_tuple();

  // Keeps the value just completed in the pickle's memo and returns its index; recall(index)
  // writes that same value again (one object in Python, shared by every place it appears).
  uint32_t remember();
  void recall(uint32_t index);

  // The pickle, ended; the writer is spent afterwards.
  std::string finish();

 private:
  void opcode(uint8_t op) { out_ += static_cast<char>(op); }
  void little_endian(uint64_t value, int bytes);

  std::string out_;
  uint32_t memo_size_ = 0;
};

}  // namespace vramshim::analyzer
