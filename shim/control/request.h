// The control socket's request language (README.md, "Control socket"), parsed by a pure function so
// it can be fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace vramshim::control {

// The longest request line served, newline excluded.
inline constexpr size_t kMaxRequestBytes = 4096;

enum class RequestKind { kPing, kStats, kSites, kFlush, kReport, kTrim, kLimit };

// The most sites a `sites` request may ask for, and how many it gets without a count.
inline constexpr std::uint64_t kMaxSitesAsked = 1000;
inline constexpr std::uint64_t kDefaultSitesAsked = 10;

struct Request {
  RequestKind kind = RequestKind::kPing;
  bool deep = false;        // kFlush: ask the Python frameworks to empty their caches first
  std::string path;         // kReport: where to write; empty means the configured pattern
  std::uint64_t bytes = 0;  // kTrim: cached bytes to keep
  std::uint64_t count = kDefaultSitesAsked;  // kSites: how many sites
  std::optional<std::uint64_t> limit;        // kLimit: the new cap; nullopt for "limit off"
};

struct ParsedRequest {
  std::optional<Request> request;  // set when the line is a valid request
  std::string error;               // otherwise, why not (e.g. "unknown request: frobnicate")
};

// Parses one request line without its newline:
//   ping | stats | sites [COUNT] | flush [deep] | report [PATH] | trim BYTES | limit BYTES|off
// Words are separated by spaces or tabs; leading and trailing blanks and a trailing '\r' are
// ignored. PATH is the rest of the line (it may contain spaces) and must not contain control
// characters. BYTES takes the SIZE syntax of the environment (parse_size). COUNT is a decimal
// number from 1 to kMaxSitesAsked. Never throws on any input.
ParsedRequest parse_request(std::string_view line);

}  // namespace vramshim::control
