#include "shim/control/request.h"

#include "shim/control/size.h"

namespace vramshim::control {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view trim_blanks(std::string_view text) {
  while (!text.empty() && (is_blank(text.back()) || text.back() == '\r')) text.remove_suffix(1);
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  return text;
}

// A piece of client input quoted in an error message, cut short so an answer stays small.
std::string quoted_input(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  return std::string(text.substr(0, kMaxShown)) + (text.size() > kMaxShown ? "…" : "");
}

ParsedRequest failure(std::string message) {
  return ParsedRequest{std::nullopt, std::move(message)};
}

ParsedRequest success(Request request) { return ParsedRequest{std::move(request), {}}; }

}  // namespace

ParsedRequest parse_request(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // a CRLF line end
  if (line.size() > kMaxRequestBytes) return failure("request longer than 4096 bytes");
  line = trim_blanks(line);
  if (line.empty()) return failure("empty request");

  size_t word_end = 0;
  while (word_end < line.size() && !is_blank(line[word_end])) ++word_end;
  const std::string_view word = line.substr(0, word_end);
  const std::string_view argument = trim_blanks(line.substr(word_end));

  Request request;
  if (word == "ping" || word == "stats") {
    if (!argument.empty()) return failure(std::string(word) + " takes no argument");
    request.kind = word == "ping" ? RequestKind::kPing : RequestKind::kStats;
    return success(std::move(request));
  }
  if (word == "sites") {
    request.kind = RequestKind::kSites;
    if (argument.empty()) return success(std::move(request));
    std::uint64_t count = 0;
    for (char c : argument) {
      if (c < '0' || c > '9' || count > kMaxSitesAsked) {
        count = 0;
        break;
      }
      count = count * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (count < 1 || count > kMaxSitesAsked) {
      return failure("sites needs a count from 1 to " + std::to_string(kMaxSitesAsked) +
                     ", got \"" + quoted_input(argument) + "\"");
    }
    request.count = count;
    return success(std::move(request));
  }
  if (word == "flush") {
    if (!argument.empty() && argument != "deep") return failure("flush takes no argument but deep");
    request.kind = RequestKind::kFlush;
    request.deep = argument == "deep";
    return success(std::move(request));
  }
  if (word == "report") {
    for (char c : argument) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return failure("report path contains a control character");
      }
    }
    request.kind = RequestKind::kReport;
    request.path = std::string(argument);
    return success(std::move(request));
  }
  if (word == "trim") {
    const std::optional<std::uint64_t> bytes = parse_size(argument);
    if (!bytes)
      return failure("trim needs a size in bytes, got \"" + quoted_input(argument) + "\"");
    request.kind = RequestKind::kTrim;
    request.bytes = *bytes;
    return success(std::move(request));
  }
  if (word == "limit") {
    request.kind = RequestKind::kLimit;
    if (argument == "off") return success(std::move(request));
    const std::optional<std::uint64_t> bytes = parse_size(argument);
    if (!bytes) {
      return failure("limit needs a size in bytes or off, got \"" + quoted_input(argument) + "\"");
    }
    // As VRAMSHIM_LIMIT: a cap of 0 bytes would fail every allocation of the job from now on.
    if (*bytes == 0) return failure("limit 0 would fail every allocation; a size above 0, or off");
    if (*bytes > kMaxLimitBytes) return failure("limit past 4 EiB (2^62 bytes): say off");
    request.limit = *bytes;
    return success(std::move(request));
  }
  return failure("unknown request: " + quoted_input(word));
}

}  // namespace vramshim::control
