#include "shim/oom/stats_answer.h"

#include <cctype>
#include <charconv>
#include <optional>

namespace vramshim::oom {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

size_t skip_spaces(std::string_view text, size_t at) {
  while (at < text.size() && is_space(text[at])) ++at;
  return at;
}

// Where the value of the member "key" of `object` starts, or npos. Keys are matched with their
// quotes, so "device" never matches "devices".
size_t value_of(std::string_view object, std::string_view key) {
  for (size_t at = object.find(key); at != std::string_view::npos; at = object.find(key, at + 1)) {
    if (at == 0 || object[at - 1] != '"' || at + key.size() >= object.size() ||
        object[at + key.size()] != '"') {
      continue;
    }
    const size_t colon = skip_spaces(object, at + key.size() + 1);
    if (colon < object.size() && object[colon] == ':') return skip_spaces(object, colon + 1);
  }
  return std::string_view::npos;
}

std::optional<std::uint64_t> number_member(std::string_view object, std::string_view key) {
  const size_t at = value_of(object, key);
  if (at == std::string_view::npos) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, error] =
      std::from_chars(object.data() + at, object.data() + object.size(), value);
  if (error != std::errc()) return std::nullopt;
  return value;
}

// The text of the string member "key" of `object` as written (escapes left as they are), or
// nullopt when it is missing or not a string.
std::optional<std::string_view> string_member(std::string_view object, std::string_view key) {
  const size_t at = value_of(object, key);
  if (at == std::string_view::npos || object[at] != '"') return std::nullopt;
  for (size_t end = at + 1; end < object.size(); ++end) {
    if (object[end] == '\\') {
      ++end;
    } else if (object[end] == '"') {
      return object.substr(at + 1, end - at - 1);
    }
  }
  return std::nullopt;
}

// Bus ids are hexadecimal: NVML and the driver may differ in case.
bool same_bus_id(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The end (one past the closing brace) of the object that starts at `open`, or npos. Strings are
// skipped, so braces inside them do not count.
size_t object_end(std::string_view text, size_t open) {
  int depth = 0;
  bool in_string = false;
  for (size_t at = open; at < text.size(); ++at) {
    const char c = text[at];
    if (in_string) {
      if (c == '\\') {
        ++at;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return at + 1;
    }
  }
  return std::string_view::npos;
}

}  // namespace

StatsReading read_stats_answer(std::string_view answer, int device, std::string_view pci_bus_id) {
  StatsReading reading;
  const size_t ok = value_of(answer, "ok");
  if (ok == std::string_view::npos) return reading;
  if (answer.compare(ok, 5, "false") == 0) {
    reading.kind = StatsReading::Kind::kRefused;
    return reading;
  }
  if (answer.compare(ok, 4, "true") != 0) return reading;

  size_t at = value_of(answer, "devices");
  if (at == std::string_view::npos || answer[at] != '[') return reading;
  at = skip_spaces(answer, at + 1);
  while (at < answer.size() && answer[at] == '{') {
    const size_t end = object_end(answer, at);
    if (end == std::string_view::npos) return reading;
    const std::string_view object = answer.substr(at, end - at);
    const std::optional<std::uint64_t> number = number_member(object, "device");
    if (!number) return reading;
    const std::optional<std::string_view> bus_id = string_member(object, "pci_bus_id");
    const bool same_device = !pci_bus_id.empty() && bus_id
                                 ? same_bus_id(*bus_id, pci_bus_id)
                                 : *number == static_cast<std::uint64_t>(device);
    if (same_device) {
      const std::optional<std::uint64_t> in_use = number_member(object, "in_use_bytes");
      const std::optional<std::uint64_t> cached = number_member(object, "cached_bytes");
      if (!in_use || !cached) return reading;
      reading.kind = StatsReading::Kind::kFigures;
      reading.figures = {*in_use, *cached};
      return reading;
    }
    at = skip_spaces(answer, end);
    if (at < answer.size() && answer[at] == ',') at = skip_spaces(answer, at + 1);
  }
  if (at < answer.size() && answer[at] == ']') reading.kind = StatsReading::Kind::kNoSuchDevice;
  return reading;
}

}  // namespace vramshim::oom
