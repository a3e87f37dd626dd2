#include "analyzer/model/report_parser.h"

#include <stdexcept>

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// A member of a report's object that the reader reads, and the members it reads of the objects
// under it (the member's value, or its arrays' items); nullptr for none. Lists end with a null key.
// Every other member is skipped as it is parsed: a DOM of a file's unknown members (17 million
// empty objects in a 51 MB file) took gigabytes, for nothing.
struct Member {
  const char* key;
  const Member* members;
};

// A process's share of a site; "ranks" holds them.
const Member kRank[] = {{"process", nullptr},
#define VRAMSHIM_SITE_FIGURE(name, ...) {#name, nullptr},
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
                        {nullptr, nullptr}};
const Member kSite[] = {{"stack", nullptr},
                        {"kind", nullptr},
                        {"ranks", kRank},
#define VRAMSHIM_SITE_FIGURE(name, ...) {#name, nullptr},
#include "shim/support/site_figures.def"
#undef VRAMSHIM_SITE_FIGURE
                        {nullptr, nullptr}};
const Member kDevice[] = {{"device", nullptr},
#define VRAMSHIM_DEVICE_FIGURE(name, ...) {#name, nullptr},
#include "shim/support/device_figures.def"
#undef VRAMSHIM_DEVICE_FIGURE
                          {nullptr, nullptr}};
const Member kPeak[] = {{"in_use_bytes", nullptr}, {"time", nullptr}, {nullptr, nullptr}};
const Member kConfig[] = {{"pool", nullptr},
                          {"stacks", nullptr},
                          {"sample_bytes", nullptr},
                          {"stack_depth", nullptr},
                          {"limit_bytes", nullptr},
                          {"max_cached_bytes", nullptr},
                          {"stack_table_bytes", nullptr},
                          {"allocations_past_stack_table", nullptr},
                          {nullptr, nullptr}};
const Member kModule[] = {{"id", nullptr},       {"path", nullptr},   {"base", nullptr},
                          {"build_id", nullptr}, {"loaded", nullptr}, {"deleted", nullptr},
                          {"segments", nullptr}, {nullptr, nullptr}};
const Member kFrame[] = {{"id", nullptr},     {"python", nullptr}, {"symbolized", nullptr},
                         {"file", nullptr},   {"line", nullptr},   {"function", nullptr},
                         {"module", nullptr}, {"offset", nullptr}, {nullptr, nullptr}};
const Member kSegment[] = {{"device", nullptr}, {"base", nullptr},       {"size", nullptr},
                           {"blocks", nullptr}, {"expandable", nullptr}, {nullptr, nullptr}};
const Member kRequest[] = {{"bytes", nullptr}, {"kind", nullptr},  {"device", nullptr},
                           {"call", nullptr},  {"cause", nullptr}, {"stack", nullptr},
                           {nullptr, nullptr}};
const Member kLeadingSite[] = {{"stack", nullptr},
                               {"kind", nullptr},
                               {"live_bytes", nullptr},
                               {"live_count", nullptr},
                               {nullptr, nullptr}};
const Member kOtherProcess[] = {{"pid", nullptr},          {"command", nullptr},
                                {"source", nullptr},       {"in_use_bytes", nullptr},
                                {"cached_bytes", nullptr}, {"used_bytes", nullptr},
                                {nullptr, nullptr}};
const Member kOutOfMemory[] = {{"request", kRequest},
                               {"time", nullptr},
                               {"failures", nullptr},
                               {"verdict", nullptr},
                               {"explanation", nullptr},
                               {"device_total_bytes", nullptr},
                               {"device_free_bytes", nullptr},
                               {"held_elsewhere_bytes", nullptr},
                               {"in_use_bytes", nullptr},
                               {"cached_bytes", nullptr},
                               {"reserved_bytes", nullptr},
                               {"direct_bytes", nullptr},
                               {"limit_bytes", nullptr},
                               {"pool_free_bytes", nullptr},
                               {"pool_largest_free_block", nullptr},
                               {"leading_sites", kLeadingSite},
                               {"other_processes", kOtherProcess},
                               {"unasked", nullptr},
                               {"segments", kSegment},
                               {nullptr, nullptr}};
const Member kEndingSignal[] = {
    {"signal", nullptr},     {"signal_name", nullptr}, {"code", nullptr}, {"address", nullptr},
    {"sender_pid", nullptr}, {"thread_id", nullptr},   {nullptr, nullptr}};
const Member kTrace[] = {
    {"capacity", nullptr}, {"recorded", nullptr}, {"events", nullptr}, {nullptr, nullptr}};
const Member kMergedProcess[] = {{"pid", nullptr},         {"cmdline", nullptr},
                                 {"exe", nullptr},         {"host", nullptr},
                                 {"rank", nullptr},        {"start_time", nullptr},
                                 {"report_time", nullptr}, {"reason", nullptr},
                                 {"devices", kDevice},     {"peak_in_use_bytes", nullptr},
                                 {"timeline", nullptr},    {"oom", kOutOfMemory},
                                 {"segments", kSegment},   {"trace", kTrace},
                                 {"crash", kEndingSignal}, {"terminated", kEndingSignal},
                                 {nullptr, nullptr}};
const Member kProcess[] = {{"pid", nullptr},         {"cmdline", nullptr}, {"exe", nullptr},
                           {"host", nullptr},        {"rank", nullptr},    {"start_time", nullptr},
                           {"report_time", nullptr}, {nullptr, nullptr}};
const Member kSiteHistory[] = {
    {"site", nullptr}, {"at_peak", nullptr}, {"points", nullptr}, {nullptr, nullptr}};
const Member kHistory[] = {
    {"budget_bytes", nullptr},    {"ticks", nullptr}, {"ticks_per_slot", nullptr},
    {"untracked_sites", nullptr}, {"peak", kPeak},    {"slot_times", nullptr},
    {"sites", kSiteHistory},      {nullptr, nullptr}};
const Member kTimeline[] = {{"interval_ms", nullptr}, {"samples", nullptr}, {nullptr, nullptr}};
// The top level; "stacks" is parsed apart.
const Member kReport[] = {{"format", nullptr},
                          {"version", nullptr},
                          {"reason", nullptr},
                          {"sequence", nullptr},
                          {"process", kProcess},
                          {"config", kConfig},
                          {"devices", kDevice},
                          {"peak", kPeak},
                          {"modules", kModule},
                          {"frames", kFrame},
                          {"oom", kOutOfMemory},
                          {"merged_from", kMergedProcess},
                          {"sites", kSite},
                          {"segments", kSegment},
                          {"history", kHistory},
                          {"trace", kTrace},
                          {"timeline", kTimeline},
                          {"crash", kEndingSignal},
                          {"terminated", kEndingSignal},
                          {nullptr, nullptr}};

const Member* find_member(const Member* members, const std::string& key) {
  for (const Member* m = members; m != nullptr && m->key != nullptr; ++m) {
    if (key == m->key) return m;
  }
  return nullptr;
}

// A SAX handler that builds the DOM (as nlohmann's own parser does) of the members the reader reads
// (kReport), but fills the top-level "stacks" array directly into std::vector<Stack>.
class ReportSax : public json::json_sax_t {
 public:
  explicit ReportSax(ParsedReport& out) : out_(out) {}

  const std::string& error() const { return error_; }
  size_t error_byte() const { return error_byte_; }

  bool null() override { return in_stacks() ? stack_scalar("null") : scalar(json()); }
  bool boolean(bool v) override {
    return in_stacks() ? stack_scalar("a boolean") : scalar(json(v));
  }
  bool number_integer(number_integer_t v) override {
    return in_stacks() ? stack_number(v) : scalar(json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    return in_stacks() ? stack_number(v > (uint64_t{1} << 62) ? -1 : static_cast<int64_t>(v))
                       : scalar(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    return in_stacks() ? stack_scalar("a fraction") : scalar(json(v));
  }
  bool string(string_t& v) override {
    return in_stacks() ? stack_scalar("a string") : scalar(json(std::move(v)));
  }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }

  bool start_object(std::size_t) override {
    return in_stacks() ? stack_open(true) : open(json::object());
  }
  bool key(string_t& k) override {
    if (in_stacks()) {
      if (skip_depth_ == 0 && depth_ == 2) key_ = k;
      return true;
    }
    if (unread_depth_ > 0) return true;
    if (refs_.size() == 1 && k == "stacks") {
      // The stacks list: parsed by the stack_* handlers until its array closes.
      stacks_state_ = StacksState::kExpectList;
      out_.stacks.emplace();
      return true;
    }
    const Member* member = find_member(members_.back(), k);
    if (member == nullptr) {
      skip_next_ = true;
      return true;
    }
    pending_ = &(*refs_.back())[k];
    pending_members_ = member->members;
    return true;
  }
  bool end_object() override { return in_stacks() ? stack_close() : close(); }
  bool start_array(std::size_t) override {
    return in_stacks() ? stack_open(false) : open(json::array());
  }
  bool end_array() override { return in_stacks() ? stack_close() : close(); }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    error_byte_ = position;
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix.
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    error_ = what;
    syntax_error_ = true;
    return false;
  }

  bool syntax_error() const { return syntax_error_; }

 private:
  enum class StacksState { kNone, kExpectList, kInList, kDone };

  bool in_stacks() const {
    return stacks_state_ == StacksState::kExpectList || stacks_state_ == StacksState::kInList;
  }

  bool fail(const std::string& message) {
    error_ = message;
    return false;
  }

  std::string where() const {
    return "stacks[" + std::to_string(out_.stacks->empty() ? 0 : out_.stacks->size() - 1) + "]";
  }

  // A value outside the stacks list: added, or skipped when it is (in) a member the reader does not
  // read.
  bool scalar(json value) {
    if (unread_depth_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    return add(std::move(value)) != nullptr;
  }

  bool open(json container) {
    if (unread_depth_ > 0 || skip_next_) {
      skip_next_ = false;
      ++unread_depth_;
      return true;
    }
    // The members read of the objects in it: an array's items are read as the array is.
    const Member* members = refs_.empty()              ? kReport
                            : refs_.back()->is_array() ? members_.back()
                                                       : pending_members_;
    json* value = add(std::move(container));
    if (value == nullptr) return false;
    refs_.push_back(value);
    members_.push_back(members);
    return true;
  }

  bool close() {
    if (unread_depth_ > 0) {
      --unread_depth_;
      return true;
    }
    refs_.pop_back();
    members_.pop_back();
    return true;
  }

  json* add(json value) {
    if (refs_.empty()) {
      out_.document = std::move(value);
      return &out_.document;
    }
    json& parent = *refs_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *pending_ = std::move(value);
    return pending_;
  }

  // depth_: 1 inside the list, 2 inside a stack object, 3 inside its "frames" array.
  bool stack_open(bool object) {
    if (skip_depth_ > 0) {
      ++skip_depth_;
      return true;
    }
    if (stacks_state_ == StacksState::kExpectList) {
      if (object) return fail("stacks: must be an array");
      stacks_state_ = StacksState::kInList;
      depth_ = 1;
      return true;
    }
    if (depth_ == 1) {
      if (!object)
        return fail("stacks[" + std::to_string(out_.stacks->size()) + "]: must be an object");
      out_.stacks->emplace_back();
      has_frames_ = false;
      key_.clear();
      depth_ = 2;
      return true;
    }
    if (depth_ == 2 && key_ == "frames") {
      if (object) return fail(where() + ".frames: must be an array");
      has_frames_ = true;
      depth_ = 3;
      return true;
    }
    if (depth_ == 2 && key_ == "id") return fail(where() + ".id: must be an integer");
    if (depth_ == 2) {
      skip_depth_ = 1;  // an unknown member's value: ignored
      return true;
    }
    return fail(where() + ".frames: must hold frame ids");
  }

  bool stack_close() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    if (depth_ == 3) {
      depth_ = 2;
      return true;
    }
    if (depth_ == 2) {
      if (!has_frames_) return fail(where() + ".frames: missing");
      depth_ = 1;
      return true;
    }
    stacks_state_ = StacksState::kDone;
    depth_ = 0;
    return true;
  }

  bool stack_number(int64_t value) {
    if (skip_depth_ > 0) return true;
    if (stacks_state_ == StacksState::kExpectList) return fail("stacks: must be an array");
    if (depth_ == 3) {
      if (value < 0 || value > UINT32_MAX)
        return fail(where() + ".frames: no such frame " + std::to_string(value));
      out_.stacks->back().frames.push_back(static_cast<uint32_t>(value));
      return true;
    }
    if (depth_ == 2 && key_ == "id") {
      const auto expected = static_cast<int64_t>(out_.stacks->size() - 1);
      if (value != expected) {
        return fail(where() + ".id: ids must be dense indices (expected " +
                    std::to_string(expected) + ")");
      }
      return true;
    }
    if (depth_ == 2) return true;  // an unknown member
    return fail(depth_ == 1
                    ? "stacks[" + std::to_string(out_.stacks->size()) + "]: must be an object"
                    : where() + ": unexpected value");
  }

  bool stack_scalar(const char* what) {
    if (skip_depth_ > 0) return true;
    if (stacks_state_ == StacksState::kExpectList) return fail("stacks: must be an array");
    if (depth_ == 2 && key_ != "id" && key_ != "frames") return true;  // an unknown member
    if (depth_ == 3) return fail(where() + ".frames: must hold frame ids, not " + what);
    if (depth_ == 2)
      return fail(where() + "." + key_ + ": must be " + (key_ == "id" ? "an integer" : "an array"));
    return fail("stacks[" + std::to_string(out_.stacks->size()) + "]: must be an object");
  }

  ParsedReport& out_;
  std::vector<json*> refs_;
  std::vector<const Member*> members_;  // per open container: the members read of its objects
  json* pending_ = nullptr;
  const Member* pending_members_ = nullptr;  // the pending member's
  bool skip_next_ = false;                   // the next value is a member the reader does not read
  int unread_depth_ = 0;                     // containers open in such a member
  StacksState stacks_state_ = StacksState::kNone;
  int depth_ = 0;
  int skip_depth_ = 0;
  bool has_frames_ = false;
  std::string key_;
  std::string error_;
  size_t error_byte_ = 0;
  bool syntax_error_ = false;
};

}  // namespace

ParsedReport parse_report_text(const std::string& text, const std::string& source) {
  // JSON has no place for a NUL byte, and the parser takes one for the end of the text: a report
  // followed by "\0" and anything would pass.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    throw std::runtime_error(source + ": not valid JSON (a NUL byte at byte " +
                             std::to_string(nul) + ")");
  }
  ParsedReport parsed;
  ReportSax sax(parsed);
  if (json::sax_parse(text, &sax)) return parsed;
  if (!sax.syntax_error()) throw std::runtime_error(source + ": " + sax.error());
  // An error at the very end of the text means the document stops early (a partial copy).
  const bool truncated = sax.error_byte() >= text.size();
  throw std::runtime_error(source + ": " + (truncated ? "truncated report (" : "not valid JSON (") +
                           sax.error() + ")");
}

}  // namespace vramshim::analyzer
