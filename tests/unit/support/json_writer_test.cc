// The shim's JSON writer: structure, the report's raw layout, numbers, escaping, and valid output
// for any bytes.
#include "shim/support/json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace vramshim::support {
namespace {

TEST(JsonWriterTest, NestedStructureWithCommas) {
  StringSink out;
  JsonWriter w(out);
  w.begin_object();
  w.key("ok").boolean(true);
  w.key("devices").begin_array();
  w.begin_object().key("device").number(0u).key("limit").null().end_object();
  w.begin_object().key("device").number(1u).key("delta").number(-5).end_object();
  w.end_array();
  w.key("empty").begin_array().end_array();
  w.key("ratio").number(0.25);
  w.end_object();
  EXPECT_EQ(out.text(),
            R"({"ok":true,"devices":[{"device":0,"limit":null},{"device":1,"delta":-5}],)"
            R"("empty":[],"ratio":0.25})");
}

TEST(JsonWriterTest, ExtremeNumbers) {
  StringSink out;
  JsonWriter w(out);
  w.begin_array();
  w.number(std::numeric_limits<std::uint64_t>::max());
  w.number(std::numeric_limits<std::int64_t>::min());
  w.number(std::numeric_limits<double>::quiet_NaN());
  w.number(std::numeric_limits<double>::infinity());
  w.end_array();
  EXPECT_EQ(out.text(), "[18446744073709551615,-9223372036854775808,null,null]");
}

TEST(JsonWriterTest, NumbersOfEveryWidthAndShortestReals) {
  StringSink out;
  JsonWriter(out)
      .begin_array()
      .number(std::numeric_limits<std::uint32_t>::max())
      .number(std::numeric_limits<std::int32_t>::min())
      .number(1795980000.25)
      .number(0.1)
      .number_or_null(std::optional<std::uint64_t>(7))
      .number_or_null(std::nullopt)
      .end_array();
  EXPECT_EQ(out.text(), "[4294967295,-2147483648,1795980000.25,0.1,7,null]");
}

TEST(JsonWriterTest, RawLayoutBetweenTopLevelValuesAddsNoCommas) {
  StringSink out;
  JsonWriter w(out);
  w.raw("{\"pid\": ").number(42).raw(", \"exe\": ").string("/bin/x").raw(", \"rank\": ");
  w.number_or_null(std::nullopt).raw(",\n\"ok\": ").boolean(false).raw('}');
  EXPECT_EQ(out.text(), "{\"pid\": 42, \"exe\": \"/bin/x\", \"rank\": null,\n\"ok\": false}");
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  StringSink out;
  JsonWriter w(out);
  w.string(std::string("a\"b\\c\n\x01\x1f", 8));
  EXPECT_EQ(out.text(), R"("a\"b\\c\u000a\u0001\u001f")");
  EXPECT_EQ(nlohmann::json::parse(out.text()).get<std::string>(), std::string("a\"b\\c\n\x01\x1f"));
}

TEST(JsonWriterTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  StringSink valid_text;
  JsonWriter valid(valid_text);
  valid.string("héllo → 😀");
  EXPECT_EQ(valid_text.text(), "\"héllo → 😀\"");  // as it is, not escaped
  EXPECT_EQ(nlohmann::json::parse(valid_text.text()).get<std::string>(), "héllo → 😀");

  StringSink invalid_text;
  JsonWriter invalid(invalid_text);
  invalid.string(
      "a\xff"
      "b\xc3"
      "\xed\xa0\x80"
      "\xf0\x9f\x98");  // stray, cut, surrogate, truncated
  const std::string decoded = nlohmann::json::parse(invalid_text.text()).get<std::string>();
  EXPECT_EQ(decoded.substr(0, 1), "a");
  EXPECT_NE(decoded.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD

  StringSink bytes_text;
  JsonWriter bytes(bytes_text);
  bytes.string("bad \xff\xfe end");  // one U+FFFD per invalid byte
  EXPECT_EQ(bytes_text.text(), R"("bad \ufffd\ufffd end")");
}

TEST(JsonWriterTest, RandomBytesAlwaysGiveValidJson) {
  std::mt19937 random(42);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(random() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    StringSink out;
    JsonWriter w(out);
    w.begin_object().key(bytes).string(bytes).end_object();
    EXPECT_NO_THROW(nlohmann::json::parse(out.text())) << out.text();
  }
}

}  // namespace
}  // namespace vramshim::support
