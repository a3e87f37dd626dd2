// The deep flush and the stack support in a process that does not run Python (this test).
#include "shim/python/deep_flush.h"

#include <gtest/gtest.h>

#include "shim/python/python_stacks.h"

namespace vramshim::python {
namespace {

TEST(DeepFlushWithoutPythonTest, ReturnsAClearError) {
  bool observed = false;
  const DeepFlushResult result =
      deep_flush_frameworks(find_interpreter_symbols(), std::chrono::milliseconds(100),
                            [&](const DeepFlushStep&) { observed = true; });
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error, "the process does not run Python");
  EXPECT_TRUE(result.steps.empty());
  EXPECT_FALSE(observed);
}

TEST(PythonStacksWithoutPythonTest, StacksStayNative) {
  EXPECT_FALSE(find_interpreter_symbols().has_interpreter());
  EXPECT_EQ(PythonStacks::create(PythonMode::kAuto), nullptr);
  EXPECT_EQ(PythonStacks::create(PythonMode::kOff), nullptr);
}

TEST(FlushStepOutcomeTest, NamesEachOutcome) {
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kRan), "ran");
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kSkipped), "skipped");
  EXPECT_STREQ(flush_step_outcome_name(FlushStepOutcome::kFailed), "failed");
}

}  // namespace
}  // namespace vramshim::python
