// Functions inlined into inlined functions (built -O2 -g): code whose DWARF nests inlined
// subroutines three deep in a subprogram, several times over, with a lambda and a class template's
// member among them. compile_unit_scopes_test reads its DWARF; it is not run.
#include <cstdio>

namespace {

volatile int sink = 0;

__attribute__((noinline)) void touch(int value) { sink = sink + value; }

__attribute__((always_inline)) inline void innermost(int value) {
  touch(value);
  touch(value + 1);
}

__attribute__((always_inline)) inline void middle(int value) {
  innermost(value);
  touch(value * 2);
  innermost(value + 3);
}

template <typename T>
struct Layer {
  __attribute__((always_inline)) void run(T value) {
    middle(static_cast<int>(value));
    [&]() __attribute__((always_inline)) { middle(static_cast<int>(value) + 5); }
    ();
  }
};

}  // namespace

__attribute__((noinline)) void outer(int value) {
  Layer<int>().run(value);
  Layer<long>().run(value + 7);
}

int main(int argc, char**) {
  outer(argc);
  std::printf("%d\n", sink);
  return 0;
}
