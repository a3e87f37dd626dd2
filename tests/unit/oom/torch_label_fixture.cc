// Functions named as LibTorch's allocator, an ATen operator and an autograd node, in a library
// whose file name says LibTorch: the frames of a backward pass, for the shim's site labels.
#include <cstdint>
#include <cstdlib>

namespace c10::cuda::CUDACachingAllocator {
__attribute__((noinline)) void* raw_alloc(unsigned long bytes) { return std::malloc(bytes); }
}  // namespace c10::cuda::CUDACachingAllocator

namespace at::_ops {
struct neg {
  static void* call(unsigned long bytes);
};
__attribute__((noinline)) void* neg::call(unsigned long bytes) {
  return c10::cuda::CUDACachingAllocator::raw_alloc(bytes);
}
}  // namespace at::_ops

namespace torch::autograd::generated {
struct SubBackward0 {
  static void* apply(unsigned long bytes);
};
__attribute__((noinline)) void* SubBackward0::apply(unsigned long bytes) {
  return at::_ops::neg::call(bytes);
}
}  // namespace torch::autograd::generated

// Return addresses inside each, innermost first: the allocator, the operator, the node.
extern "C" void torch_label_fixture_frames(uint64_t frames[3]) {
  frames[0] = reinterpret_cast<uint64_t>(&c10::cuda::CUDACachingAllocator::raw_alloc) + 1;
  frames[1] = reinterpret_cast<uint64_t>(&at::_ops::neg::call) + 1;
  frames[2] = reinterpret_cast<uint64_t>(&torch::autograd::generated::SubBackward0::apply) + 1;
}
