#include "tests/unit/attribution/jit_frame.h"

#include <sys/mman.h>

#include <cstring>
#include <thread>

namespace vramshim::testing {

bool call_from_jit_frame(void (*at_bottom)(void*), void* argument) {
  // sub $8,%rsp; mov %rdi,%rax; mov %rsi,%rdi; call *%rax; add $8,%rsp; ret
  static const unsigned char kTrampoline[] = {0x48, 0x83, 0xEC, 0x08, 0x48, 0x89, 0xF8, 0x48, 0x89,
                                              0xF7, 0xFF, 0xD0, 0x48, 0x83, 0xC4, 0x08, 0xC3};
  void* page =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return false;
  std::memcpy(page, kTrampoline, sizeof(kTrampoline));
  using Trampoline = void (*)(void (*)(void*), void*);
  std::thread([&] { reinterpret_cast<Trampoline>(page)(at_bottom, argument); }).join();
  munmap(page, 4096);
  return true;
}

}  // namespace vramshim::testing
