// The out-of-memory block on stderr: its lines of the sites holding the most.
#include "shim/oom/explanation.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace vramshim::oom {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// The lines under "the sites holding the most:", without the prefix and indent.
std::vector<std::string> site_lines(const std::string& block) {
  std::vector<std::string> lines;
  std::istringstream in(block.substr(block.find("the sites holding the most:")));
  std::string line;
  std::getline(in, line);
  const std::string indent = "vramshim:     ";
  while (std::getline(in, line) && line.rfind(indent, 0) == 0) {
    lines.push_back(line.substr(indent.size()));
  }
  return lines;
}

// One function reached from six callers is six stacks: a line each repeated its name and split
// its bytes (alloc_b's 30 MiB came first, then alloc_a's 20 MiB four times), though it holds the
// most.
TEST(Explanation, TheSitesHoldingTheMostAreSummedByLabel) {
  OutOfMemoryFacts facts;
  facts.request.bytes = 64 * kMiB;
  ExplanationLabels labels;
  facts.leading_sites.push_back({7, attribution::AllocationKind::kDevice, 30 * kMiB, 1});
  labels.leading_sites.push_back("alloc_b");
  for (int32_t stack = 0; stack < 6; ++stack) {
    facts.leading_sites.push_back({stack, attribution::AllocationKind::kDevice, 20 * kMiB, 1});
    labels.leading_sites.push_back("alloc_a");
  }
  facts.leading_sites.push_back({8, attribution::AllocationKind::kHost, 1 * kMiB, 2});
  labels.leading_sites.push_back("alloc_a");  // the same function, another kind of memory
  EXPECT_EQ(site_lines(explain(facts, labels)),
            (std::vector<std::string>{"120.0 MiB in 6 allocations  alloc_a",
                                      "30.0 MiB in 1 allocation  alloc_b",
                                      "1.0 MiB in 2 allocations  alloc_a"}));
}

}  // namespace
}  // namespace vramshim::oom
