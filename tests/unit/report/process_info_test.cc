#include "shim/report/process_info.h"

#include <gtest/gtest.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>

namespace vramshim::report {
namespace {

TEST(ProcessInfo, RankComesFromTheFirstVariableSetInContractOrder) {
  for (const char* name :
       {"RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
    unsetenv(name);
  }
  EXPECT_FALSE(rank_from_environment().has_value());
  setenv("PMI_RANK", "5", 1);
  EXPECT_EQ(rank_from_environment(), "5");
  setenv("SLURM_PROCID", "2", 1);
  EXPECT_EQ(rank_from_environment(), "2");
  setenv("LOCAL_RANK", "", 1);  // empty counts as unset
  EXPECT_EQ(rank_from_environment(), "2");
  setenv("RANK", "0", 1);
  EXPECT_EQ(rank_from_environment(), "0");
}

TEST(ProcessInfo, DescribesThisProcess) {
  const ProcessInfo info = read_process_info(std::string("1"));
  EXPECT_EQ(info.pid, getpid());
  ASSERT_FALSE(info.cmdline.empty());
  EXPECT_NE(info.cmdline[0].find("process_info_test"), std::string::npos);
  EXPECT_NE(info.exe.find("process_info_test"), std::string::npos);
  EXPECT_FALSE(info.host.empty());
  EXPECT_EQ(info.rank, "1");
  const double now = static_cast<double>(time(nullptr));
  EXPECT_LE(info.start_time, now + 1);
  EXPECT_GT(info.start_time, now - 600);
}

}  // namespace
}  // namespace vramshim::report
