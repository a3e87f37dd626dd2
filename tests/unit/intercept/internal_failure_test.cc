// An exception in the shim's bookkeeping around a driver call is the shim's failure: it never
// leaves the hook, it is noted once (no pool serves anything after it), and the code after it, the
// driver call or the return of its result, still runs.
#include "shim/intercept/internal_failure.h"

#include <gtest/gtest.h>

#include <new>

namespace vramshim::intercept {
namespace {

// One test: the failure, once noted, stays for the life of the process.
TEST(ContainFailure, NotesAnExceptionAndGoesOn) {
  bool ran = false;
  contain_failure("cuStreamCreate", [&] { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_FALSE(internal_failure_seen());

  contain_failure("cuStreamCreate", [] { throw std::bad_alloc(); });  // does not leave it
  EXPECT_TRUE(internal_failure_seen());

  contain_failure("cuCtxCreate", [] { throw 42; });  // not a std::exception either
  EXPECT_TRUE(internal_failure_seen());
  EXPECT_EQ(failed_hook("cuMemAlloc_v2", "std::bad_alloc"), CUDA_ERROR_OUT_OF_MEMORY);
}

}  // namespace
}  // namespace vramshim::intercept
