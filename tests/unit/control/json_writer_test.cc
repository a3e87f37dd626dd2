// The shim's JSON writer: structure, escaping, and valid output for any bytes.
#include "shim/control/json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <random>

namespace vramshim::control {
namespace {

TEST(JsonWriterTest, NestedStructureWithCommas) {
  JsonWriter w;
  w.begin_object();
  w.key("ok").boolean(true);
  w.key("devices").begin_array();
  w.begin_object().key("device").unsigned_number(0).key("limit").null().end_object();
  w.begin_object().key("device").unsigned_number(1).key("delta").signed_number(-5).end_object();
  w.end_array();
  w.key("empty").begin_array().end_array();
  w.key("ratio").real_number(0.25);
  w.end_object();
  EXPECT_EQ(w.text(), R"({"ok":true,"devices":[{"device":0,"limit":null},{"device":1,"delta":-5}],)"
                      R"("empty":[],"ratio":0.25})");
}

TEST(JsonWriterTest, ExtremeNumbers) {
  JsonWriter w;
  w.begin_array();
  w.unsigned_number(std::numeric_limits<std::uint64_t>::max());
  w.signed_number(std::numeric_limits<std::int64_t>::min());
  w.real_number(std::numeric_limits<double>::quiet_NaN());
  w.real_number(std::numeric_limits<double>::infinity());
  w.end_array();
  EXPECT_EQ(w.text(), "[18446744073709551615,-9223372036854775808,null,null]");
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  JsonWriter w;
  w.string(std::string("a\"b\\c\n\x01\x1f", 8));
  EXPECT_EQ(w.text(), R"("a\"b\\c\u000a\u0001\u001f")");
  EXPECT_EQ(nlohmann::json::parse(w.text()).get<std::string>(), std::string("a\"b\\c\n\x01\x1f"));
}

TEST(JsonWriterTest, KeepsValidUtf8AndReplacesInvalidBytes) {
  JsonWriter valid;
  valid.string("héllo → 😀");
  EXPECT_EQ(nlohmann::json::parse(valid.text()).get<std::string>(), "héllo → 😀");

  JsonWriter invalid;
  invalid.string(
      "a\xff"
      "b\xc3"
      "\xed\xa0\x80"
      "\xf0\x9f\x98");  // stray, cut, surrogate, truncated
  const std::string decoded = nlohmann::json::parse(invalid.text()).get<std::string>();
  EXPECT_EQ(decoded.substr(0, 1), "a");
  EXPECT_NE(decoded.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(JsonWriterTest, RandomBytesAlwaysGiveValidJson) {
  std::mt19937 random(42);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(random() % 40, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    JsonWriter w;
    w.begin_object().key(bytes).string(bytes).end_object();
    EXPECT_NO_THROW(nlohmann::json::parse(w.text())) << w.text();
  }
}

}  // namespace
}  // namespace vramshim::control
