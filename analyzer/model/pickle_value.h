// A Python value read from a pickle: None, bool, int, float, str, bytes, list, tuple or dict.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vramshim::analyzer {

// One value of a pickle as the strict reader (pickle_reader.h) builds it. A value the pickle
// shares (its memo) is one node referenced from every place it appears, as in Python, so a file
// of shared references cannot multiply into more nodes than it has opcodes.
class PickleValue {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kTuple, kDict };
  using Ref = std::shared_ptr<PickleValue>;
  using Entry = std::pair<Ref, Ref>;

  explicit PickleValue(Kind kind) : kind_(kind) {}

  Kind kind() const { return kind_; }
  bool is(Kind kind) const { return kind_ == kind; }
  // "None", "bool", "int", …, as Python names the type.
  static const char* kind_name(Kind kind);
  const char* kind_name() const { return kind_name(kind_); }

  // The scalar, for kBool and kInt (bool as 0 or 1).
  int64_t integer() const { return integer_; }
  double real() const { return real_; }
  // UTF-8 text for kString, raw bytes for kBytes.
  const std::string& text() const { return text_; }
  // Elements of a list or tuple.
  const std::vector<Ref>& items() const { return items_; }
  // Key-value pairs of a dict in the order they were set; a key set twice appears twice.
  const std::vector<Entry>& entries() const { return entries_; }
  // The value of the str key `key` in a dict (the last one set, as Python keeps), or null.
  const PickleValue* find(std::string_view key) const;

  // Containers nested inside this one, plus one for a container itself.
  int depth() const { return depth_; }

 private:
  friend class PickleReader;

  Kind kind_;
  int64_t integer_ = 0;
  double real_ = 0;
  std::string text_;
  std::vector<Ref> items_;
  std::vector<Entry> entries_;
  int depth_ = 0;
  // A container becomes sealed once it is placed inside another or fetched from the memo: Python
  // never adds to a container after that unless it contains itself, which no trace does.
  bool sealed_ = false;
  // A tuple holding a list or dict (directly or deeper), which Python could not use as a dict key.
  bool unhashable_ = false;
  // Set only on the reader's stand-ins for the two functions a protocol 2 pickle names to rebuild
  // bytes (pickle_reader.cc); such a value never leaves the reader.
  enum class Callable { kNone, kCodecsEncode, kBytes };
  Callable callable_ = Callable::kNone;
};

}  // namespace vramshim::analyzer
