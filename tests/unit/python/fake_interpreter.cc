#include "tests/unit/python/fake_interpreter.h"

#include <atomic>

namespace vramshim::python::testing {

namespace {

uint64_t fake_code_type[32];
std::atomic<bool> finalizing{false};
thread_local uintptr_t this_thread_state = 0;

int is_initialized() { return 1; }
int is_finalizing() { return finalizing.load() ? 1 : 0; }
PyThreadStatePtr get_this_thread_state() {
  return reinterpret_cast<PyThreadStatePtr>(this_thread_state);
}

template <typename T>
void write(uintptr_t object, int32_t offset, T value) {
  std::memcpy(reinterpret_cast<void*>(object + offset), &value, sizeof(T));
}

}  // namespace

FakeInterpreter::FakeInterpreter(const PythonLayout& layout) : layout_(layout) {
  symbols_.Py_IsInitialized = is_initialized;
  symbols_.Py_IsFinalizing = is_finalizing;
  symbols_.PyGILState_GetThisThreadState = get_this_thread_state;
  symbols_.PyCode_Type = fake_code_type;
  finalizing = false;
  this_thread_state = 0;  // not an earlier fake's, whose memory is gone
  thread_state_ = allocate(256);
  current_frame_holder_ = thread_state_;
  if (layout_.thread_cframe >= 0) {
    current_frame_holder_ = allocate(64);
    write<uintptr_t>(thread_state_, layout_.thread_cframe, current_frame_holder_);
  }
}

uintptr_t FakeInterpreter::allocate(size_t bytes) {
  blocks_.emplace_back((bytes + 7) / 8, 0);
  return reinterpret_cast<uintptr_t>(blocks_.back().data());
}

uintptr_t FakeInterpreter::add_str(const std::string& text) {
  const uintptr_t str = allocate(layout_.str_ascii_size + text.size() + 1);
  write<int64_t>(str, layout_.str_length, static_cast<int64_t>(text.size()));
  write<uint32_t>(str, layout_.str_state,
                  (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
  std::memcpy(reinterpret_cast<void*>(str + layout_.str_ascii_size), text.data(), text.size());
  return str;
}

uintptr_t FakeInterpreter::add_bytes(const std::vector<uint8_t>& data) {
  const uintptr_t bytes = allocate(layout_.bytes_data + data.size() + 1);
  write<int64_t>(bytes, layout_.bytes_size, static_cast<int64_t>(data.size()));
  std::memcpy(reinterpret_cast<void*>(bytes + layout_.bytes_data), data.data(), data.size());
  return bytes;
}

uintptr_t FakeInterpreter::add_code(const std::string& file, const std::string& qualname,
                                    int firstlineno, const std::vector<uint8_t>& line_table) {
  const uintptr_t code = allocate(layout_.code_units + 256);
  write<uintptr_t>(code, layout_.object_type, reinterpret_cast<uintptr_t>(fake_code_type));
  write<uintptr_t>(code, layout_.code_filename, add_str(file));
  write<uintptr_t>(code, layout_.code_name, add_str(qualname));
  write<int32_t>(code, layout_.code_firstlineno, firstlineno);
  write<uintptr_t>(code, layout_.code_linetable, add_bytes(line_table));
  return code;
}

uintptr_t FakeInterpreter::add_frame(uintptr_t code, int unit, uintptr_t previous) {
  const uintptr_t frame = allocate(128);
  write<uintptr_t>(frame, layout_.frame_code, code | layout_.frame_code_tag_bits);
  write<uintptr_t>(frame, layout_.frame_previous, previous);
  write<uintptr_t>(frame, layout_.frame_instruction, code + layout_.code_units + 2 * unit);
  write<uint8_t>(frame, layout_.frame_marker, 0);  // FRAME_OWNED_BY_THREAD
  return frame;
}

uintptr_t FakeInterpreter::add_entry_frame(uintptr_t previous) {
  const uintptr_t frame = add_frame(0, 0, previous);
  write<uint8_t>(frame, layout_.frame_marker, layout_.entry_frame_owner);
  return frame;
}

uintptr_t FakeInterpreter::add_torn_frame(uintptr_t previous) {
  const uintptr_t not_code = allocate(64);  // its ob_type is null
  return add_frame(not_code, 0, previous);
}

void FakeInterpreter::set_previous(uintptr_t frame, uintptr_t previous) {
  write<uintptr_t>(frame, layout_.frame_previous, previous);
}

void FakeInterpreter::set_current_frame(uintptr_t frame) {
  write<uintptr_t>(current_frame_holder_, layout_.cframe_current_frame, frame);
  this_thread_state = thread_state_;
}

void FakeInterpreter::set_finalizing(bool value) { finalizing = value; }

}  // namespace vramshim::python::testing
