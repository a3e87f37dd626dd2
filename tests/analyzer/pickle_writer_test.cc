// The pickle writer: every value it writes reads back as written (by the strict reader, which
// follows Python's unpickler), integers at each width's edges, text that is not UTF-8 as U+FFFD,
// memo references as one shared value. Python's own pickle reads its output in
// //tests/integration:torch_snapshot_test.
#include "analyzer/export/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "analyzer/model/pickle_reader.h"

namespace vramshim::analyzer {
namespace {

using Kind = PickleValue::Kind;

TEST(PickleWriterTest, IntegersOfEveryWidthReadBackExactly) {
  const int64_t values[] = {0,
                            1,
                            255,
                            256,
                            65535,
                            65536,
                            -1,
                            -128,
                            -129,
                            INT32_MAX,
                            INT32_MIN,
                            int64_t{1} << 31,
                            -(int64_t{1} << 31) - 1,
                            0x7f2a00000000,
                            -(int64_t{1} << 47),
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  PickleWriter writer;
  writer.begin_list();
  for (int64_t value : values) writer.integer(value);
  writer.end_list();
  const PickleValue::Ref list = read_pickle(writer.finish());
  ASSERT_TRUE(list->is(Kind::kList));
  ASSERT_EQ(list->items().size(), std::size(values));
  for (size_t i = 0; i < std::size(values); ++i) {
    EXPECT_TRUE(list->items()[i]->is(Kind::kInt)) << i;
    EXPECT_EQ(list->items()[i]->integer(), values[i]) << i;
  }
}

TEST(PickleWriterTest, ScalarsStringsAndContainersReadBackAsWritten) {
  PickleWriter writer;
  writer.begin_dict();
  writer.string("none");
  writer.none();
  writer.string("yes");
  writer.boolean(true);
  writer.string("no");
  writer.boolean(false);
  writer.string("real");
  writer.real(-2.5e-3);
  writer.string("long text");
  writer.string(std::string(300, 'x'));
  writer.string("not utf-8");
  writer.string(
      "a\xff"
      "b\xe2\x82");
  writer.string("pair");
  writer.begin_tuple();
  writer.integer(1);
  writer.string("\xc3\xa9");
  writer.end_tuple();
  writer.string("empty");
  writer.begin_dict();
  writer.end_dict();
  writer.end_dict();
  const PickleValue::Ref dict = read_pickle(writer.finish());
  ASSERT_TRUE(dict->is(Kind::kDict));
  EXPECT_TRUE(dict->find("none")->is(Kind::kNone));
  EXPECT_TRUE(dict->find("yes")->is(Kind::kBool));
  EXPECT_EQ(dict->find("yes")->integer(), 1);
  EXPECT_EQ(dict->find("no")->integer(), 0);
  EXPECT_DOUBLE_EQ(dict->find("real")->real(), -2.5e-3);
  EXPECT_EQ(dict->find("long text")->text(), std::string(300, 'x'));
  EXPECT_EQ(dict->find("not utf-8")->text(),
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd\xef\xbf\xbd");
  const PickleValue* pair = dict->find("pair");
  ASSERT_TRUE(pair->is(Kind::kTuple));
  ASSERT_EQ(pair->items().size(), 2u);
  EXPECT_EQ(pair->items()[1]->text(), "\xc3\xa9");
  EXPECT_TRUE(dict->find("empty")->entries().empty());
}

TEST(PickleWriterTest, ARememberedValueIsOneValueWhereverItIsRecalled) {
  PickleWriter writer;
  writer.begin_list();
  std::vector<uint32_t> memo;
  for (int i = 0; i < 300; ++i) {  // past 256: the four-byte memo opcodes too
    writer.begin_list();
    writer.integer(i);
    writer.end_list();
    memo.push_back(writer.remember());
  }
  for (int i = 0; i < 300; ++i) writer.recall(memo[static_cast<size_t>(299 - i)]);
  writer.end_list();
  const PickleValue::Ref list = read_pickle(writer.finish());
  ASSERT_EQ(list->items().size(), 600u);
  for (size_t i = 0; i < 300; ++i) {
    EXPECT_EQ(list->items()[300 + i].get(), list->items()[299 - i].get()) << i;
    EXPECT_EQ(list->items()[300 + i]->items()[0]->integer(), static_cast<int64_t>(299 - i));
  }
}

}  // namespace
}  // namespace vramshim::analyzer
