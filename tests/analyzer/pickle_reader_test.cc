// The strict pickle reader: what Python's pickle writes for plain data reads back as written, in
// every protocol from 2 to 5; anything that would run code, other types, protocols 0 and 1,
// self-containing or too deep structures, and truncated or corrupt input are refused with a
// message, never a crash.
#include "analyzer/model/pickle_reader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

namespace vramshim::analyzer {
namespace {

using Kind = PickleValue::Kind;

const char kFixtures[] = "tests/analyzer/trace_fixtures/";

std::string fixture(const std::string& name) {
  std::ifstream in(kFixtures + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A string literal with the NULs in it.
template <size_t N>
std::string bytes(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

// The message read_pickle throws for `data`; fails the test if it reads it.
std::string refusal(const std::string& data) {
  try {
    read_pickle(data);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "read without error";
  return "";
}

const PickleValue& at(const PickleValue& dict, const char* key) {
  const PickleValue* value = dict.find(key);
  if (value == nullptr) throw std::runtime_error(std::string("no key ") + key);
  return *value;
}

// SAMPLE of make_trace_fixtures.py.
void expect_sample(const PickleValue& sample) {
  ASSERT_TRUE(sample.is(Kind::kDict));
  EXPECT_TRUE(at(sample, "none").is(Kind::kNone));
  EXPECT_TRUE(at(sample, "true").is(Kind::kBool));
  EXPECT_EQ(at(sample, "true").integer(), 1);
  EXPECT_EQ(at(sample, "false").integer(), 0);

  const int64_t ints[] = {
      0,    1,          255,           256,          65535,        65536,     -1,
      -256, 2147483647, -2147483648LL, 2147483648LL, 4294967296LL, INT64_MAX, INT64_MIN};
  const PickleValue& read_ints = at(sample, "ints");
  ASSERT_EQ(read_ints.items().size(), std::size(ints));
  for (size_t i = 0; i < std::size(ints); ++i) {
    EXPECT_TRUE(read_ints.items()[i]->is(Kind::kInt));
    EXPECT_EQ(read_ints.items()[i]->integer(), ints[i]) << i;
  }
  const PickleValue& floats = at(sample, "floats");
  ASSERT_EQ(floats.items().size(), 2u);
  EXPECT_EQ(floats.items()[0]->real(), 0.1);
  EXPECT_EQ(floats.items()[1]->real(), -1.5e300);

  EXPECT_EQ(at(sample, "str").text(), "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80 \xed\xa0\x80");
  EXPECT_TRUE(at(sample, "bytes").is(Kind::kBytes));
  EXPECT_EQ(at(sample, "bytes").text(), bytes("\x00\xff"
                                              "ab"));
  EXPECT_TRUE(at(sample, "empty_bytes").is(Kind::kBytes));
  EXPECT_EQ(at(sample, "empty_bytes").text(), "");

  const PickleValue& tuples = at(sample, "tuples");
  ASSERT_EQ(tuples.items().size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(tuples.items()[i]->is(Kind::kTuple));
    EXPECT_EQ(tuples.items()[i]->items().size(), i);
  }
  EXPECT_EQ(tuples.items()[2]->items()[1]->text(), "two");

  const PickleValue& shared = at(sample, "shared");
  ASSERT_EQ(shared.items().size(), 2u);
  EXPECT_EQ(shared.items()[0], shared.items()[1]) << "a shared value is one node";
  EXPECT_EQ(at(*shared.items()[0], "shared").integer(), 1);

  const PickleValue& nested = at(at(at(sample, "nested"), "a"), "b");
  EXPECT_EQ(at(*nested.items()[0], "c").integer(), 3);
  EXPECT_EQ(sample.depth(), 5);

  bool tuple_key = false;
  bool int_key = false;
  for (const auto& [key, value] : sample.entries()) {
    if (key->is(Kind::kTuple)) tuple_key = value->text() == "tuple as key";
    if (key->is(Kind::kInt)) int_key = key->integer() == 5 && value->text() == "int key";
  }
  EXPECT_TRUE(tuple_key);
  EXPECT_TRUE(int_key);
}

TEST(PickleReader, ReadsWhatPythonWritesInEveryProtocol) {
  for (int protocol = 2; protocol <= 5; ++protocol) {
    SCOPED_TRACE("protocol " + std::to_string(protocol));
    expect_sample(*read_pickle(fixture("plain_p" + std::to_string(protocol) + ".pickle")));

    const PickleValue::Ref large =
        read_pickle(fixture("large_p" + std::to_string(protocol) + ".pickle"));
    const PickleValue& many = at(*large, "many");
    ASSERT_EQ(many.items().size(), 1500u);
    for (size_t i = 0; i < many.items().size(); ++i) {
      ASSERT_EQ(many.items()[i]->integer(), static_cast<int64_t>(i));
    }
    EXPECT_EQ(at(*large, "long_str").text(), std::string(70000, 'x'));
    const std::string& long_bytes = at(*large, "long_bytes").text();
    ASSERT_EQ(long_bytes.size(), 256u * 300u);
    for (size_t i = 0; i < long_bytes.size(); ++i) {
      ASSERT_EQ(static_cast<uint8_t>(long_bytes[i]), i % 256) << i;
    }
  }
}

TEST(PickleReader, RefusesWhatWouldRunCodeOrIsNotPlainData) {
  const struct {
    const char* file;
    const char* message;
  } cases[] = {
      {"refused_global.pickle", "(GLOBAL) refused: it names posix.system"},
      {"refused_stack_global.pickle", "(STACK_GLOBAL) refused"},
      {"refused_object.pickle", "(STACK_GLOBAL) refused"},
      {"refused_set.pickle", "(EMPTY_SET) refused"},
      {"refused_bytearray.pickle", "(BYTEARRAY8) refused"},
      {"refused_protocol0.pickle", "protocols 0 and 1 are refused"},
      {"refused_protocol1.pickle", "protocols 0 and 1 are refused"},
      {"refused_self_containing.pickle", "contains itself"},
      {"refused_deep.pickle", "nested deeper than 64 levels"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(fixture(c.file));
    EXPECT_NE(message.find(c.message), std::string::npos) << c.file << ": " << message;
    EXPECT_EQ(message.rfind("at byte ", 0), 0u) << message;
  }
}

TEST(PickleReader, RefusesMalformedInput) {
  const std::string p4 = "\x80\x04";
  const std::string deep = p4 + std::string(70, ']') + std::string(69, 'a') + ".";
  const struct {
    std::string data;
    const char* message;
  } cases[] = {
      {"", "empty"},
      {"(N.", "no PROTO opcode first"},
      {"\x80\x01N.", "pickle protocol 1"},
      {"\x80\x06N.", "pickle protocol 6"},
      {p4 + ".", "STOP with 0 values"},
      {p4 + "NN.", "STOP with 2 values"},
      {p4 + "(N.", "STOP inside an unfinished MARK"},
      {p4 + "N", "ends before its STOP"},
      {p4 + "N.x", "data after the pickle's STOP"},
      {p4 + "\x80\x04N.", "a second PROTO"},
      {p4 + "\x8b\xff\xff\xff\xff.", "negative length"},
      {p4 + "\x8d\xff\xff\xff\xff\xff\xff\xff\x7f.", "ends in the middle of an opcode"},
      {p4 + "\x95\x64" + std::string(7, '\0') + "N.", "FRAME longer than the rest"},
      {p4 + "\x95\x03" + std::string(7, '\0') + "\x8c\x05hello.", "past the end of its frame"},
      {p4 + "\x95\x0b" + std::string(7, '\0') + "N\x95\x01" + std::string(7, '\0') + "..",
       "FRAME begins before the end"},
      {p4 + "\x8c\x02\xff\xfe.", "not UTF-8"},
      {p4 + "\x8c\x02\xc0\x80.", "not UTF-8"},  // an overlong NUL
      {p4 + "h\x05.", "never stored"},
      {p4 + "\x94.", "nothing on the stack"},
      {p4 + "Na.", "APPEND needs a list"},
      {p4 + "](N.", "STOP inside"},
      {p4 + "e.", "MARK that was never set"},
      {p4 + "}(Nu.", "SETITEMS with a key but no value"},
      {p4 + "}]Ns.", "dict key of type list"},
      {p4 + "}]\x85Ns.", "dict key of type tuple"},
      {p4 + bytes("]\x94h\x00"
                  "a."),
       "contains itself"},
      {p4 + "]\x94]\x94"
            "ah\x01Na.",
       "adds to a list after using it"},
      {deep, "nested deeper than 64 levels"},
      {p4 + std::string(65, '('), "more than 64 MARKs"},
      {p4 + "\x93.", "(STACK_GLOBAL) refused"},
      {p4 + "R.", "empty stack"},
      {p4 + "N)R.", "(REDUCE) refused"},
      {p4 + "\xff.", "unknown opcode 0xff"},
      {"\x80\x02"
       "c__builtin__\neval\n.",
       "names __builtin__.eval"},
      {"\x80\x02"
       "cos\n" +
           std::string(200, 'a'),
       "over 128 bytes"},
      {"\x80\x02"
       "c_codecs\nencode\n.",
       "is a Python function"},
      {"\x80\x02"
       "c_codecs\nencode\n]\x85R.",
       "arguments other than"},
      {"\x80\x02"
       "c_codecs\nencode\nN.",
       "STOP with 2 values"},
      {bytes("\x80\x02"
             "c_codecs\nencode\nq\x00]h\x00"
             "a."),
       "a Python function used as data"},
      {bytes("\x80\x02"
             "c_codecs\nencode\nX\x02\x00\x00\x00\xc4\x80X\x06\x00\x00\x00latin1\x86R."),
       "outside latin1"},
      {"\x80\x02"
       "c__builtin__\nbytes\nK\x01\x85R.",
       "bytes() rebuilt from arguments"},
  };
  for (const auto& c : cases) {
    const std::string message = refusal(c.data);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected '" << c.message << "', got: " << message;
  }
}

// PyTorch writes a frame's line number unsigned: a line of 2^64 - 1 (CPython's -1, "no line") is
// 9 bytes. Such ints saturate, and the file is still read.
TEST(PickleReader, ReadsIntsWiderThan64BitsSaturated) {
  const std::string p4 = "\x80\x04";
  const auto long1 = [&](const std::string& little_endian) {
    return read_pickle(p4 + "\x8a" + static_cast<char>(little_endian.size()) + little_endian + ".")
        ->integer();
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(long1(std::string(8, '\xff') + '\0'), kMax) << "2^64 - 1";
  EXPECT_EQ(long1(std::string(9, '\x01')), kMax);
  EXPECT_EQ(long1(std::string(8, '\0') + '\x80'), kMin);
  EXPECT_EQ(long1(std::string(7, '\0') + '\x80' + '\0'), kMax) << "2^63";
  EXPECT_EQ(long1(std::string(7, '\xff') + '\x7f' + '\xff'), kMin) << "-2^63 - 1";
  EXPECT_EQ(long1(std::string(9, '\xff')), -1) << "wide, but fits";
  EXPECT_EQ(long1('\x05' + std::string(11, '\0')), 5) << "wide, but fits";
  EXPECT_EQ(long1(std::string(7, '\xff') + '\x7f' + '\0'), kMax) << "2^63 - 1, fits";
}

TEST(PickleReader, RebuildsProtocolTwoBytesWithoutCallingAnything) {
  const PickleValue::Ref value =
      read_pickle(bytes("\x80\x02"
                        "c_codecs\nencode\nX\x03\x00\x00\x00\xc3\xbf"
                        "aX\x06\x00\x00\x00latin1\x86R."));
  EXPECT_TRUE(value->is(Kind::kBytes));
  EXPECT_EQ(value->text(),
            "\xff"
            "a");
}

TEST(PickleReader, RefusesEveryTruncation) {
  for (const char* name : {"plain_p2.pickle", "plain_p4.pickle", "snapshot_valid.pickle"}) {
    const std::string data = fixture(name);
    for (size_t length = 0; length < data.size(); ++length) {
      EXPECT_THROW(read_pickle(data.substr(0, length)), std::runtime_error) << name << length;
    }
  }
  const std::string large = fixture("large_p4.pickle");
  for (size_t length = 0; length < large.size(); length += 997) {
    EXPECT_THROW(read_pickle(large.substr(0, length)), std::runtime_error) << length;
  }
}

// Every byte replaced by values that make lengths, memo indices and opcodes hostile: the reader
// answers with a value or an error, never a crash or a hang.
TEST(PickleReader, SurvivesCorruptBytes) {
  for (const char* name : {"plain_p2.pickle", "plain_p5.pickle", "snapshot_valid.pickle"}) {
    const std::string data = fixture(name);
    size_t refused = 0;
    for (size_t at = 0; at < data.size(); ++at) {
      for (const char replacement : {'\x00', '\x7f', '\x80', '\xff', '(', 'h', ']'}) {
        std::string corrupt = data;
        corrupt[at] = replacement;
        try {
          read_pickle(corrupt);
        } catch (const std::runtime_error&) {
          ++refused;
        }
      }
    }
    EXPECT_GT(refused, data.size()) << name;
  }
}

}  // namespace
}  // namespace vramshim::analyzer
