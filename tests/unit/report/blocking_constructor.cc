// A library whose constructor never returns: dlopen holds the loader's lock meanwhile, so a report
// writer that reaches dladdr waits forever, part-way through its file. Before blocking it writes
// one byte to the descriptor named by VRAMSHIM_TEST_READY_FD.
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void block_in_constructor() {
  const char* ready = getenv("VRAMSHIM_TEST_READY_FD");
  if (ready != nullptr) {
    const char byte = 'r';
    (void)!write(atoi(ready), &byte, 1);
  }
  for (;;) pause();
}
