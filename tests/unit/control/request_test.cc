// The control request language: every request, its arguments, and what is refused.
#include "shim/control/request.h"

#include <gtest/gtest.h>

namespace vramshim::control {
namespace {

Request must_parse(std::string_view line) {
  const ParsedRequest parsed = parse_request(line);
  EXPECT_TRUE(parsed.request.has_value()) << line << ": " << parsed.error;
  return parsed.request.value_or(Request{});
}

std::string error_of(std::string_view line) {
  const ParsedRequest parsed = parse_request(line);
  EXPECT_FALSE(parsed.request.has_value()) << line;
  return parsed.error;
}

TEST(RequestTest, CommandsWithoutArguments) {
  EXPECT_EQ(must_parse("ping").kind, RequestKind::kPing);
  EXPECT_EQ(must_parse("stats").kind, RequestKind::kStats);
  EXPECT_EQ(must_parse("flush").kind, RequestKind::kFlush);
  EXPECT_EQ(must_parse("  flush\t\r").kind, RequestKind::kFlush);
  EXPECT_FALSE(must_parse("flush").deep);
  EXPECT_TRUE(must_parse("flush deep").deep);
  EXPECT_EQ(must_parse(" flush \tdeep ").kind, RequestKind::kFlush);
  EXPECT_EQ(error_of("flush now"), "flush takes no argument but deep");
}

TEST(RequestTest, ReportWithAndWithoutPath) {
  EXPECT_EQ(must_parse("report").path, "");
  const Request request = must_parse("report /tmp/my dir/snap.json ");
  EXPECT_EQ(request.kind, RequestKind::kReport);
  EXPECT_EQ(request.path, "/tmp/my dir/snap.json");
  EXPECT_EQ(error_of(std::string("report /tmp/a\x01") + "b"),
            "report path contains a control character");
}

TEST(RequestTest, SitesTakesABoundedCount) {
  EXPECT_EQ(must_parse("sites").kind, RequestKind::kSites);
  EXPECT_EQ(must_parse("sites").count, kDefaultSitesAsked);
  EXPECT_EQ(must_parse("sites 1").count, 1u);
  EXPECT_EQ(must_parse(" sites\t1000 ").count, 1000u);
  const std::string refused = "sites needs a count from 1 to 1000, got ";
  EXPECT_EQ(error_of("sites 0"), refused + "\"0\"");
  EXPECT_EQ(error_of("sites 1001"), refused + "\"1001\"");
  EXPECT_EQ(error_of("sites 99999999999999999999999"), refused + "\"99999999999999999999999\"");
  EXPECT_EQ(error_of("sites -3"), refused + "\"-3\"");
  EXPECT_EQ(error_of("sites 5 6"), refused + "\"5 6\"");
  EXPECT_EQ(error_of("sites 1M"), refused + "\"1M\"");
}

TEST(RequestTest, TrimTakesASize) {
  EXPECT_EQ(must_parse("trim 0").bytes, 0u);
  EXPECT_EQ(must_parse("trim 1048576").bytes, 1u << 20);
  EXPECT_EQ(must_parse("trim 2G").bytes, 2ull << 30);
  EXPECT_EQ(error_of("trim"), "trim needs a size in bytes, got \"\"");
  EXPECT_EQ(error_of("trim lots"), "trim needs a size in bytes, got \"lots\"");
}

TEST(RequestTest, LimitTakesASizeOrOff) {
  const Request on = must_parse("limit 10GiB");
  EXPECT_EQ(on.kind, RequestKind::kLimit);
  EXPECT_EQ(on.limit, 10ull << 30);
  const Request off = must_parse("limit off");
  EXPECT_EQ(off.kind, RequestKind::kLimit);
  EXPECT_FALSE(off.limit.has_value());
  EXPECT_EQ(error_of("limit"), "limit needs a size in bytes or off, got \"\"");
  EXPECT_EQ(error_of("limit 0"), "limit 0 would fail every allocation; a size above 0, or off");
  EXPECT_EQ(error_of("limit 18446744073709551615"), "limit past 4 EiB (2^62 bytes): say off");
  EXPECT_EQ(must_parse("limit 4194304TiB").limit, uint64_t{1} << 62);
}

TEST(RequestTest, UnknownAndEmpty) {
  EXPECT_EQ(error_of("frobnicate 3"), "unknown request: frobnicate");
  EXPECT_EQ(error_of("PING"), "unknown request: PING");
  EXPECT_EQ(error_of(""), "empty request");
  EXPECT_EQ(error_of(" \t "), "empty request");
  const std::string long_word(300, 'x');
  EXPECT_EQ(error_of(long_word), "unknown request: " + std::string(64, 'x') + "…");
}

TEST(RequestTest, LengthLimit) {
  const std::string path_at_limit = "report /" + std::string(kMaxRequestBytes - 8, 'p');
  EXPECT_EQ(path_at_limit.size(), kMaxRequestBytes);
  EXPECT_EQ(must_parse(path_at_limit).kind, RequestKind::kReport);
  EXPECT_EQ(error_of(path_at_limit + "p"), "request longer than 4096 bytes");
}

}  // namespace
}  // namespace vramshim::control
