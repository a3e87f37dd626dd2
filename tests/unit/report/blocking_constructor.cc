// A library whose constructor never returns: dlopen holds the loader's lock meanwhile, which a
// report writer must not wait for (dladdr would, for ever). Before blocking it writes one byte to
// the descriptor named by VRAMSHIM_TEST_READY_FD.
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
