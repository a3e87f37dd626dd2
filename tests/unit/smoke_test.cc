#include <gtest/gtest.h>
#include <cuda.h>
TEST(Smoke, Works){ EXPECT_EQ(1,1); }
