#include "shim/oom/stats_answer.h"

#include <gtest/gtest.h>

namespace vramshim::oom {
namespace {

using Kind = StatsReading::Kind;

// As the shim's control thread writes it.
constexpr char kTwoDevices[] =
    R"({"ok":true,"devices":[{"device":0,"in_use_bytes":3145728,"cached_bytes":67108864,)"
    R"("reserved_bytes":70254592,"limit_bytes":null},{"device":1,"in_use_bytes":18446744073709551615,)"
    R"("cached_bytes":0,"limit_bytes":1073741824}]})";

TEST(StatsAnswerTest, ReadsTheFiguresOfTheDeviceAsked) {
  StatsReading reading = read_stats_answer(kTwoDevices, 0, "");
  ASSERT_EQ(reading.kind, Kind::kFigures);
  EXPECT_EQ(reading.figures.in_use_bytes, 3145728u);
  EXPECT_EQ(reading.figures.cached_bytes, 67108864u);
  reading = read_stats_answer(kTwoDevices, 1, "");
  ASSERT_EQ(reading.kind, Kind::kFigures);
  EXPECT_EQ(reading.figures.in_use_bytes, UINT64_MAX);
  EXPECT_EQ(reading.figures.cached_bytes, 0u);
}

TEST(StatsAnswerTest, ToleratesSpacesAndMembersInAnyOrder) {
  const StatsReading reading = read_stats_answer(
      R"({ "devices" : [ { "cached_bytes" : 5, "name" : "a } \" {", "device" : 0, "in_use_bytes" : 4 }, )"
      R"({ "in_use_bytes" : 6, "cached_bytes" : 7, "device" : 2 } ], "ok" : true })",
      2, "");
  ASSERT_EQ(reading.kind, Kind::kFigures);
  EXPECT_EQ(reading.figures.in_use_bytes, 6u);
  EXPECT_EQ(reading.figures.cached_bytes, 7u);
}

TEST(StatsAnswerTest, ADeviceNotListedIsNotUsedByTheProcess) {
  EXPECT_EQ(read_stats_answer(kTwoDevices, 2, "").kind, Kind::kNoSuchDevice);
  EXPECT_EQ(read_stats_answer(R"({"ok":true,"devices":[]})", 0, "").kind, Kind::kNoSuchDevice);
}

// As a shim on two GPUs answers whose CUDA_VISIBLE_DEVICES lists the node's second GPU first.
constexpr char kTwoDevicesWithBusIds[] =
    R"({"ok":true,"devices":[{"device":0,"pci_bus_id":"0000:2A:00.0","in_use_bytes":512,)"
    R"("cached_bytes":0},{"device":1,"pci_bus_id":"0000:18:00.0","in_use_bytes":64,"cached_bytes":8}]})";

// Ordinals name different GPUs in different processes: the bus id decides where both have one.
TEST(StatsAnswerTest, DevicesAreMatchedByBusIdWhereBothSidesHaveOne) {
  StatsReading reading = read_stats_answer(kTwoDevicesWithBusIds, 0, "0000:18:00.0");
  ASSERT_EQ(reading.kind, Kind::kFigures);
  EXPECT_EQ(reading.figures.in_use_bytes, 64u);
  EXPECT_EQ(reading.figures.cached_bytes, 8u);
  reading = read_stats_answer(kTwoDevicesWithBusIds, 1, "0000:2a:00.0");
  ASSERT_EQ(reading.kind, Kind::kFigures);
  EXPECT_EQ(reading.figures.in_use_bytes, 512u);
  EXPECT_EQ(read_stats_answer(kTwoDevicesWithBusIds, 0, "0000:3A:00.0").kind, Kind::kNoSuchDevice);
}

TEST(StatsAnswerTest, WithoutABusIdOnEitherSideDevicesAreMatchedByOrdinal) {
  // An older shim's answer.
  EXPECT_EQ(read_stats_answer(kTwoDevices, 1, "0000:18:00.0").figures.in_use_bytes, UINT64_MAX);
  // This process's driver gave none.
  EXPECT_EQ(read_stats_answer(kTwoDevicesWithBusIds, 0, "").figures.in_use_bytes, 512u);
}

TEST(StatsAnswerTest, AnErrorAnswerIsARefusal) {
  EXPECT_EQ(read_stats_answer(R"({"ok":false,"error":"permission denied"})", 0, "").kind,
            Kind::kRefused);
}

TEST(StatsAnswerTest, AnythingElseIsUnreadable) {
  for (
      const char* answer : {
          "",
          "hello",
          R"({"ok":true})",
          R"({"ok":"yes","devices":[]})",
          R"({"ok":true,"devices":{}})",
          R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1}]})",
          R"({"ok":true,"devices":[{"device":0,"in_use_bytes":-1,"cached_bytes":1}]})",
          R"({"ok":true,"devices":[{"device":0,"in_use_bytes":1,"cached_bytes":1)",
          R"({"ok":true,"devices":[{"in_use_bytes":1,"cached_bytes":1}]})",
          R"({"ok":true,"devices":[{"device":1,"in_use_bytes":1,"cached_bytes":1})",
          R"({"ok":true,"devices":[{"device":0,"in_use_bytes":99999999999999999999,"cached_bytes":1}]})",
      }) {
    EXPECT_EQ(read_stats_answer(answer, 0, "").kind, Kind::kUnreadable) << answer;
  }
}

}  // namespace
}  // namespace vramshim::oom
