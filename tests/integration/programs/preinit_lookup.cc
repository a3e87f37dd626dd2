// A program whose preinit function looks a function up with dlsym before the C library has set up
// its environment, as the interceptors of AddressSanitizer and ThreadSanitizer do; then it
// allocates through a dlopen'ed driver.
#include "tests/integration/programs/driver_by_dlsym.h"
#include "tests/integration/programs/fake_driver_state.h"

namespace {

// Kept, so that the call is no tail call: glibc's dlsym finds the caller's scope by the return
// address, which a tail call from a preinit function would leave inside the dynamic loader.
void* volatile found_early = nullptr;

void look_up_before_the_c_library_starts() { found_early = dlsym(RTLD_DEFAULT, "printf"); }

__attribute__((section(".preinit_array"),
               used)) void (*const preinit)() = look_up_before_the_c_library_starts;

}  // namespace

int main() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  CHECK_TRUE(found_early != nullptr);
  CHECK_TRUE(driver != nullptr);
  const DriverByDlsym d = driver_by_dlsym(driver);
  const CUdevice device = make_context_current(d);
  CUdeviceptr ptr = 0;
  CHECK_CU(d.mem_alloc(&ptr, 4096));
  CHECK_CU(d.mem_free(ptr));
  print_fake_calls({"cuMemAlloc_v2", "cuMemFree_v2"});
  CHECK_CU(d.primary_release(device));
  return 0;
}
