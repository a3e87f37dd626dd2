#include "analyzer/model/report_parser.h"

#include <stdexcept>

namespace vramshim::analyzer {
namespace {

using nlohmann::json;

// A SAX handler that builds the DOM (as nlohmann's own parser does) but fills the top-level
// "stacks" array directly into std::vector<Stack>.
class ReportSax : public json::json_sax_t {
 public:
  explicit ReportSax(ParsedReport& out) : out_(out) {}

  const std::string& error() const { return error_; }
  size_t error_byte() const { return error_byte_; }

  bool null() override { return in_stacks() ? stack_scalar("null") : add(json()) != nullptr; }
  bool boolean(bool v) override {
    return in_stacks() ? stack_scalar("a boolean") : add(json(v)) != nullptr;
  }
  bool number_integer(number_integer_t v) override {
    return in_stacks() ? stack_number(v) : add(json(v)) != nullptr;
  }
  bool number_unsigned(number_unsigned_t v) override {
    return in_stacks() ? stack_number(v > (uint64_t{1} << 62) ? -1 : static_cast<int64_t>(v))
                       : add(json(v)) != nullptr;
  }
  bool number_float(number_float_t v, const string_t&) override {
    return in_stacks() ? stack_scalar("a fraction") : add(json(v)) != nullptr;
  }
  bool string(string_t& v) override {
    return in_stacks() ? stack_scalar("a string") : add(json(std::move(v))) != nullptr;
  }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }

  bool start_object(std::size_t) override {
    if (in_stacks()) return stack_open(true);
    json* value = add(json::object());
    if (value == nullptr) return false;
    refs_.push_back(value);
    return true;
  }
  bool key(string_t& k) override {
    if (in_stacks()) {
      if (skip_depth_ == 0 && depth_ == 2) key_ = k;
      return true;
    }
    if (refs_.size() == 1 && k == "stacks") {
      // The stacks list: parsed by the stack_* handlers until its array closes.
      stacks_state_ = StacksState::kExpectList;
      out_.stacks.emplace();
      return true;
    }
    pending_ = &(*refs_.back())[k];
    return true;
  }
  bool end_object() override {
    if (in_stacks()) return stack_close();
    refs_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (in_stacks()) return stack_open(false);
    json* value = add(json::array());
    if (value == nullptr) return false;
    refs_.push_back(value);
    return true;
  }
  bool end_array() override {
    if (in_stacks()) return stack_close();
    refs_.pop_back();
    return true;
  }
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
  json* pending_ = nullptr;
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
