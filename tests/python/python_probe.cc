// A test-only shared library that a Python program loads with ctypes (CDLL: GIL released during
// the call; PyDLL: GIL held) to drive //shim/python the way the preloaded shim will: capture the
// calling thread's hybrid stack, time captures, run the deep flush.
#include <dlfcn.h>
#include <time.h>
#include <unwind.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "shim/python/deep_flush.h"
#include "shim/python/python_stacks.h"

namespace {

using vramshim::python::PythonStacks;

constexpr int kMaxFrames = 256;

// Never destroyed: daemon threads may still capture while the process runs its exit handlers.
PythonStacks* stacks() {
  static PythonStacks* const instance = PythonStacks::create().release();
  return instance;
}

struct UnwindState {
  uint64_t* frames;
  int count;
};

_Unwind_Reason_Code record_frame(_Unwind_Context* context, void* argument) {
  auto* state = static_cast<UnwindState*>(argument);
  if (state->count >= kMaxFrames) return _URC_END_OF_STACK;
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  state->frames[state->count++] = ip;
  return _URC_NO_REASON;
}

int native_stack(uint64_t* frames) {
  UnwindState state{frames, 0};
  _Unwind_Backtrace(record_frame, &state);
  return state.count;
}

nlohmann::json describe(uint64_t frame) {
  if (vramshim::python::is_python_frame(frame)) {
    const auto info = stacks()->describe(frame);
    return {
        {"python", true}, {"file", info.file}, {"function", info.function}, {"line", info.line}};
  }
  Dl_info info;
  const char* name = nullptr;
  if (dladdr(reinterpret_cast<void*>(frame - 1), &info) != 0) name = info.dli_sname;
  const bool eval = stacks() != nullptr && stacks()->eval_frames().contains_return_address(frame);
  return {{"python", false}, {"function", name != nullptr ? name : "?"}, {"eval", eval}};
}

int write_json(const nlohmann::json& value, char* buffer, int capacity) {
  const std::string text = value.dump();
  if (capacity <= 0 || static_cast<int>(text.size()) >= capacity) return -1;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return static_cast<int>(text.size());
}

// Both stacks are described after the hybrid one is made, as the shim's report describes its
// stacks after the capture: by then the eval loop's parts the capture learnt are known.
nlohmann::json capture_now() {
  uint64_t native[kMaxFrames];
  const int native_count = native_stack(native);
  uint64_t hybrid[kMaxFrames];
  const int hybrid_count =
      stacks() != nullptr ? stacks()->hybrid_stack(native, native_count, hybrid, kMaxFrames).frames
                          : 0;
  nlohmann::json result = {{"python_support", stacks() != nullptr}};
  nlohmann::json native_json = nlohmann::json::array();
  for (int i = 0; i < native_count; ++i) native_json.push_back(describe(native[i]));
  result["native"] = native_json;
  if (stacks() == nullptr) return result;
  nlohmann::json hybrid_json = nlohmann::json::array();
  for (int i = 0; i < hybrid_count; ++i) hybrid_json.push_back(describe(hybrid[i]));
  result["hybrid"] = hybrid_json;
  return result;
}

uint64_t now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace

extern "C" {

// Writes the calling thread's native and hybrid stacks as JSON; returns its length, or -1.
int probe_capture_json(char* buffer, int capacity) {
  return write_json(capture_now(), buffer, capacity);
}

// Captures hybrid stacks for `milliseconds`; writes the last one and the number taken as JSON.
int probe_capture_for_ms(int milliseconds, char* buffer, int capacity) {
  const uint64_t end = now_ns() + static_cast<uint64_t>(milliseconds) * 1000000u;
  nlohmann::json last;
  int64_t captures = 0;
  do {
    last = capture_now();
    ++captures;
  } while (now_ns() < end);
  return write_json({{"captures", captures}, {"last", last}}, buffer, capacity);
}

// Nanoseconds `iterations` captures of the calling thread's Python frames took (frames interned,
// no native unwind): the extra cost Python frames add to one allocation.
int64_t probe_python_capture_ns(int iterations) {
  if (stacks() == nullptr) return -1;
  uint64_t frames[PythonStacks::kMaxPythonFrames];
  bool ends_eval_call[PythonStacks::kMaxPythonFrames];
  stacks()->python_stack(frames, ends_eval_call, PythonStacks::kMaxPythonFrames);  // warm
  const uint64_t start = now_ns();
  for (int i = 0; i < iterations; ++i) {
    stacks()->python_stack(frames, ends_eval_call, PythonStacks::kMaxPythonFrames);
  }
  return static_cast<int64_t>(now_ns() - start);
}

// Spins for `milliseconds` without returning to Python (called through PyDLL: holds the GIL).
void probe_spin_ms(int milliseconds) {
  const uint64_t end = now_ns() + static_cast<uint64_t>(milliseconds) * 1000000u;
  while (now_ns() < end) {
  }
}

// Runs the deep flush with a GIL time limit; writes its result as JSON.
int probe_deep_flush_json(int timeout_ms, char* buffer, int capacity) {
  const auto symbols = vramshim::python::find_interpreter_symbols();
  nlohmann::json observed = nlohmann::json::array();
  const auto result = vramshim::python::deep_flush_frameworks(
      symbols, std::chrono::milliseconds(timeout_ms), std::chrono::seconds(30),
      [&observed](const vramshim::python::DeepFlushStep& step) { observed.push_back(step.name); });
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : result.steps) {
    steps.push_back({{"name", step.name},
                     {"outcome", vramshim::python::flush_step_outcome_name(step.outcome)},
                     {"detail", step.detail}});
  }
  return write_json(
      {{"ok", result.ok}, {"error", result.error}, {"steps", steps}, {"observed", observed}},
      buffer, capacity);
}

}  // extern "C"
