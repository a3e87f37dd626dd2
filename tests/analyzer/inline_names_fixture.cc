// Prints "label offset" for return addresses inside inlined functions whose DWARF has no linkage
// name: two same-named functions in two anonymous namespaces, two lambdas and a member of a class
// template, all inlined (built -O2 -g). The offset is the return address's ELF virtual address in
// this program, as a report records it. symbolizer_test resolves them; the comments "line: ..."
// mark the lines it expects.
#include <link.h>

#include <cstdint>
#include <cstdio>

namespace {

uintptr_t program_load_bias() {
  uintptr_t bias = 0;
  // The first object dl_iterate_phdr reports is the program itself.
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uintptr_t*>(out) = info->dlpi_addr;
        return 1;
      },
      &bias);
  return bias;
}

// Not inlined: its return address lies inside the inlined code that calls it.
__attribute__((noinline)) void record(const char* label) {
  const auto address = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  std::printf("%s 0x%jx\n", label, static_cast<uintmax_t>(address - program_load_bias()));
}

}  // namespace

namespace optimizer {
namespace {
__attribute__((always_inline)) inline void make_buffer() {
  record("optimizer_make_buffer");  // line: optimizer make_buffer
}
}  // namespace
}  // namespace optimizer

namespace dataloader {
namespace {
__attribute__((always_inline)) inline void make_buffer() {
  record("dataloader_make_buffer");  // line: dataloader make_buffer
}
}  // namespace
}  // namespace dataloader

namespace {
template <typename T>
struct Pool {
  __attribute__((always_inline)) void grow() {
    record("pool_grow");  // line: Pool grow
  }
};
}  // namespace

__attribute__((noinline)) void make_buffers() {
  optimizer::make_buffer();   // line: optimizer call
  dataloader::make_buffer();  // line: dataloader call
  Pool<int>().grow();         // line: Pool call
}

__attribute__((noinline)) void run_lambdas() {
  const auto first = []() __attribute__((always_inline)) {
    record("first_lambda");  // line: first lambda
  };
  const auto second = []() __attribute__((always_inline)) {
    record("second_lambda");  // line: second lambda
  };
  first();   // line: first call
  second();  // line: second call
}

int main() {
  make_buffers();
  run_lambdas();
  return 0;
}
