// C++ exceptions thrown through several frames and caught: under the shim this must behave exactly
// as without it (the shim's static C++ runtime and unwinder must not replace the program's).
#include <cstdio>
#include <stdexcept>
#include <string>

namespace {

struct Depth : std::runtime_error {
  int depth;
  explicit Depth(int d) : std::runtime_error("depth " + std::to_string(d)), depth(d) {}
};

__attribute__((noinline)) int descend(int depth) {
  if (depth == 0) throw Depth(depth);
  std::string frame_local(static_cast<size_t>(depth), 'x');  // needs cleanup while unwinding
  return descend(depth - 1) + static_cast<int>(frame_local.size());
}

}  // namespace

int main() {
  int caught = 0;
  for (int i = 0; i < 100; ++i) {
    try {
      descend(8);
    } catch (const Depth& e) {
      if (e.depth == 0 && std::string(e.what()) == "depth 0") ++caught;
    }
  }
  try {
    throw std::out_of_range("range");
  } catch (const std::logic_error& e) {
    ++caught;
  }
  std::printf("caught %d\n", caught);
  return caught == 101 ? 0 : 1;
}
