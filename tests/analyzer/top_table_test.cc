// `vramshim top` shows other users' processes to root: whatever a process says of its rank,
// device and command, each one is one line of the table, without control characters.
#include "analyzer/live/top_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace vramshim::live {
namespace {

TEST(TopTableTest, EveryRowIsOneLineWhateverTheProcessSaid) {
  std::vector<TopRow> rows(3);
  rows[0].pid = 11;
  rows[0].rank = std::string(600, 'r');  // longer than a formatted line
  rows[0].device = "0";
  rows[0].command = "python train.py";
  rows[1].pid = 12;
  rows[1].rank = "1\n   13 fake row";  // a newline would shift the selection to another pid
  rows[1].device = "\x1b]0;owned\x07";
  rows[1].command = "/usr/bin/python3 \x1b[2J serve.py";
  rows[2].pid = 13;
  rows[2].command = std::string(5000, 'c');
  const std::string table = plain_table(rows);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 4) << table;  // the header and 3 rows
  EXPECT_EQ(table.back(), '\n');
  for (const char c : table) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c);
  }
  EXPECT_NE(table.find("   11 "), std::string::npos) << table;
  EXPECT_NE(table.find("   12 "), std::string::npos) << table;
  EXPECT_NE(table.find("   13 "), std::string::npos) << table;
}

// Root sees every user's sockets: two processes of one pid found under two uids (sockets in two
// users' directories, each served as its uid promises) are two rows, each showing its uid, and
// neither's figures stand for the other's.
TEST(TopTableTest, ProcessesOfOnePidUnderTwoUidsAreTwoRows) {
  Collection collection;
  for (const uid_t uid : {1500000001u, 1002u}) {
    const std::string directory = "/tmp/vramshim-" + std::to_string(uid);
    collection.processes.push_back(
        {{77, directory + "/77.sock", uid},
         nlohmann::json{{"ok", true},
                        {"devices", {{{"device", 0}, {"in_use_bytes", uid}}}},
                        {"process", {{"command", "job-of-" + std::to_string(uid)}}}},
         nullptr,
         nullptr});
  }
  TopTable table;
  table.update(collection, 1.0);
  const std::vector<TopRow> rows = table.rows(TopSort::kInUse);
  ASSERT_EQ(rows.size(), 2u);
  const std::string text = plain_table(rows);
  EXPECT_NE(text.find(" UID  COMMAND\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" 1500000001  job-of-1500000001\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" 1002  job-of-1002\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace vramshim::live
