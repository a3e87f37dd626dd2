#include "analyzer/model/torch_snapshot_fields.h"

#include <cstdio>
#include <stdexcept>

namespace vramshim::analyzer::torch_snapshot {
namespace {

// The longest text a report may hold (JsonLimits::max_string_bytes): the imported report is read
// again.
constexpr size_t kMaxTextBytes = size_t{1} << 20;

using Kind = PickleValue::Kind;

struct ActionName {
  const char* name;
  Action action;
};

constexpr ActionName kActions[] = {
    {"alloc", Action::kAlloc},
    {"free_requested", Action::kFreeRequested},
    {"free_completed", Action::kFreeCompleted},
    {"segment_alloc", Action::kSegmentAlloc},
    {"segment_free", Action::kSegmentFree},
    {"segment_map", Action::kSegmentMap},
    {"segment_unmap", Action::kSegmentUnmap},
    {"oom", Action::kOom},
    {"snapshot", Action::kSnapshot},
    {"annotate", Action::kAnnotate},
};

}  // namespace

void EntryCount::add(size_t entries) {
  listed_ += entries;  // cannot wrap: each addition is at most the file's size, and stops here
  if (listed_ > kMaxEntries) {
    fail("", "lists more than " + std::to_string(kMaxEntries) + " " + what_ +
                 " (a shared one counted each time it is listed)");
  }
}

void EntryCount::add_trace_events(const PickleValue& traces) {
  if (!traces.is(Kind::kList)) return;
  for (const PickleValue::Ref& events : traces.items()) {
    if (events->is(Kind::kList)) add(events->items().size());
  }
}

void fail(const std::string& where, const std::string& why) {
  throw std::runtime_error(where.empty() ? why : where + ": " + why);
}

std::string shown(const std::string& text) {
  constexpr size_t kMax = 40;
  std::string result;
  for (char c : text.substr(0, kMax)) result += (c >= 0x20 && c < 0x7f) ? c : '?';
  return text.size() > kMax ? result + "..." : result;
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

void check_dict(const PickleValue& entry, const std::string& where, const char* what) {
  if (!entry.is(Kind::kDict))
    fail(where, std::string("is a ") + entry.kind_name() + ", not a dict");
  if (entry.entries().size() > kMaxFields) {
    fail(where, "has " + std::to_string(entry.entries().size()) + " fields, not " + what);
  }
}

Action action_of(const PickleValue& entry, const std::string& where) {
  const std::string& action = text_field(entry, "action", where);
  for (const ActionName& known : kActions) {
    if (action == known.name) return known.action;
  }
  fail(where, "unknown action '" + shown(action) + "'");
}

uint64_t field(const PickleValue& entry, const char* key, const std::string& where) {
  const PickleValue* value = entry.find(key);
  if (value == nullptr) fail(where, std::string("has no \"") + key + "\"");
  if (!value->is(Kind::kInt)) {
    fail(where, std::string("\"") + key + "\" is a " + value->kind_name() + ", not an int");
  }
  if (value->integer() < 0) fail(where, std::string("\"") + key + "\" is negative");
  return static_cast<uint64_t>(value->integer());
}

const std::string& text_field(const PickleValue& entry, const char* key, const std::string& where) {
  const PickleValue* value = entry.find(key);
  if (value == nullptr) fail(where, std::string("has no \"") + key + "\"");
  if (!value->is(Kind::kString)) {
    fail(where, std::string("\"") + key + "\" is a " + value->kind_name() + ", not a str");
  }
  if (value->text().size() > kMaxTextBytes) {
    fail(where,
         std::string("\"") + key + "\" is longer than " + std::to_string(kMaxTextBytes) + " bytes");
  }
  return value->text();
}

const PickleValue& list_field(const PickleValue& entry, const char* key, const std::string& where) {
  const PickleValue* value = entry.find(key);
  if (value == nullptr) fail(where, std::string("has no \"") + key + "\"");
  if (!value->is(Kind::kList)) {
    fail(where, std::string("\"") + key + "\" is a " + value->kind_name() + ", not a list");
  }
  return *value;
}

bool flag_field(const PickleValue& entry, const char* key) {
  const PickleValue* value = entry.find(key);
  return value != nullptr && value->is(Kind::kBool) && value->integer() != 0;
}

}  // namespace vramshim::analyzer::torch_snapshot
