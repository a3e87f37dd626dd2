// The _Py_DebugOffsets of default (GIL) x86-64 builds of CPython 3.13, 3.14 and 3.15 as their
// interpreters lay them out at the start of _PyRuntime: a cookie, then uint64_t fields. Holds the
// fields the shim reads, with the values 3.13.0, 3.14.10 and 3.15.2 hold; the others stay 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vramshim::python::testing {

class FakeDebugOffsets {
 public:
  explicit FakeDebugOffsets(int minor);

  // A field by its name in the version's header ("cookie", "version", "interpreter_frame.owner").
  uint64_t& operator[](const std::string& name);

  const void* runtime() const { return fields_.data(); }
  // The size of the version's struct.
  size_t bytes() const { return fields_.size() * sizeof(uint64_t); }

 private:
  std::map<std::string, int> index_;
  std::vector<uint64_t> fields_;
};

}  // namespace vramshim::python::testing
