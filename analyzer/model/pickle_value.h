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
//
// A node is 24 bytes, its text or elements kept apart: a PyTorch snapshot is millions of ints and
// small dicts, and nodes that each carried room for a string and two vectors made a snapshot take
// 22 times its file's size in memory.
class PickleValue {
 public:
  enum class Kind : uint8_t { kNone, kBool, kInt, kFloat, kString, kBytes, kList, kTuple, kDict };
  using Ref = std::shared_ptr<PickleValue>;
  using Entry = std::pair<Ref, Ref>;

  explicit PickleValue(Kind kind) : kind_(kind) {}
  ~PickleValue();
  PickleValue(const PickleValue&) = delete;
  PickleValue& operator=(const PickleValue&) = delete;

  Kind kind() const { return kind_; }
  bool is(Kind kind) const { return kind_ == kind; }
  // "None", "bool", "int", …, as Python names the type.
  static const char* kind_name(Kind kind);
  const char* kind_name() const { return kind_name(kind_); }

  // The scalar, for kBool and kInt (bool as 0 or 1).
  int64_t integer() const { return is(Kind::kFloat) ? 0 : scalar_.integer; }
  double real() const { return is(Kind::kFloat) ? scalar_.real : 0; }
  // UTF-8 text for kString, raw bytes for kBytes; empty for the other kinds.
  const std::string& text() const;
  // Elements of a list or tuple; empty for the other kinds.
  const std::vector<Ref>& items() const;
  // Key-value pairs of a dict in the order they were set; a key set twice appears twice.
  const std::vector<Entry>& entries() const;
  // The value of the str key `key` in a dict (the last one set, as Python keeps), or null.
  const PickleValue* find(std::string_view key) const;
  // Containers nested inside this one, plus one for a container itself.
  int depth() const { return depth_; }

 private:
  friend class PickleReader;

  bool has_text() const { return is(Kind::kString) || is(Kind::kBytes); }
  bool has_items() const { return is(Kind::kList) || is(Kind::kTuple); }
  // The reader's access to what it fills in (made on first use).
  std::string& mutable_text();
  std::vector<Ref>& mutable_items();
  std::vector<Entry>& mutable_entries();

  Kind kind_;
  // A container becomes sealed once it is placed inside another or fetched from the memo: Python
  // never adds to a container after that unless it contains itself, which no trace does.
  bool sealed_ = false;
  // A tuple holding a list or dict (directly or deeper), which Python could not use as a dict key.
  bool unhashable_ = false;
  // Set only on the reader's stand-ins for the two functions a protocol 2 pickle names to rebuild
  // bytes (pickle_reader.cc); such a value never leaves the reader.
  enum class Callable : uint8_t { kNone, kCodecsEncode, kBytes };
  Callable callable_ = Callable::kNone;
  int32_t depth_ = 0;
  union Scalar {
    int64_t integer;
    double real;
  } scalar_{0};
  // By kind: a std::string (str, bytes), a std::vector<Ref> (list, tuple), a std::vector<Entry>
  // (dict); null while empty.
  void* payload_ = nullptr;
};

static_assert(sizeof(PickleValue) == 24, "millions of these make a snapshot: keep it small");

}  // namespace vramshim::analyzer
