#include "analyzer/model/pickle_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/model/pickle_opcodes.h"

namespace vramshim::analyzer {
namespace {

using namespace pickle_opcodes;

struct RefusedOpcode {
  uint8_t code;
  const char* name;
  const char* why;
};

constexpr const char* kRunsCode = "it imports or calls Python code, which a trace never needs";
constexpr const char* kOldProtocol = "it belongs to protocols 0 and 1, which this reader refuses";
constexpr const char* kNotPlainData = "a trace holds no sets, bytearrays or out-of-band buffers";

// Every other opcode Python knows, so that a refusal can name it.
constexpr RefusedOpcode kRefused[] = {
    {'I', "INT", kOldProtocol},
    {'L', "LONG", kOldProtocol},
    {'S', "STRING", kOldProtocol},
    {'T', "BINSTRING", kOldProtocol},
    {'U', "SHORT_BINSTRING", kOldProtocol},
    {'V', "UNICODE", kOldProtocol},
    {'F', "FLOAT", kOldProtocol},
    {'p', "PUT", kOldProtocol},
    {'g', "GET", kOldProtocol},
    {'d', "DICT", kOldProtocol},
    {'l', "LIST", kOldProtocol},
    {'0', "POP", kOldProtocol},
    {'1', "POP_MARK", kOldProtocol},
    {'2', "DUP", kOldProtocol},
    {'i', "INST", kRunsCode},
    {'o', "OBJ", kRunsCode},
    {'b', "BUILD", kRunsCode},
    {'P', "PERSID", kRunsCode},
    {'Q', "BINPERSID", kRunsCode},
    {0x81, "NEWOBJ", kRunsCode},
    {0x82, "EXT1", kRunsCode},
    {0x83, "EXT2", kRunsCode},
    {0x84, "EXT4", kRunsCode},
    {0x92, "NEWOBJ_EX", kRunsCode},
    {0x93, "STACK_GLOBAL", kRunsCode},
    {0x8f, "EMPTY_SET", kNotPlainData},
    {0x90, "ADDITEMS", kNotPlainData},
    {0x91, "FROZENSET", kNotPlainData},
    {0x96, "BYTEARRAY8", kNotPlainData},
    {0x97, "NEXT_BUFFER", kNotPlainData},
    {0x98, "READONLY_BUFFER", kNotPlainData},
};

// The length of the UTF-8 sequence at `at`, or 0 when it is not one. Surrogates are accepted, as
// pickle encodes str with "surrogatepass"; `code_point` receives the decoded value.
size_t utf8_sequence(const std::string& text, size_t at, uint32_t* code_point) {
  // Per sequence length: the lead byte's marker under its mask (the payload is the rest of the
  // byte), and the least value a sequence of that length may encode.
  struct Form {
    uint8_t mask;
    uint8_t marker;
    uint32_t least;
  };
  static constexpr Form kForms[] = {
      {0x80, 0x00, 0}, {0xe0, 0xc0, 0x80}, {0xf0, 0xe0, 0x800}, {0xf8, 0xf0, 0x10000}};
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  for (size_t length = 1; length <= 4; ++length) {
    const Form& form = kForms[length - 1];
    if ((byte(at) & form.mask) != form.marker) continue;
    if (text.size() - at < length) return 0;
    uint32_t value = byte(at) & static_cast<uint8_t>(~form.mask);
    for (size_t i = 1; i < length; ++i) {
      if ((byte(at + i) & 0xc0) != 0x80) return 0;
      value = (value << 6) | (byte(at + i) & 0x3f);
    }
    if (value < form.least || value > 0x10ffff) return 0;
    *code_point = value;
    return length;
  }
  return 0;
}

bool is_utf8(const std::string& text) {
  uint32_t ignored;
  for (size_t at = 0; at < text.size();) {
    const size_t length = utf8_sequence(text, at, &ignored);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

}  // namespace

// Python's unpickling machine (Lib/pickle.py, _Unpickler) for the opcodes above: a stack, the
// stacks set aside by MARK, the memo, and the current frame.
class PickleReader {
 public:
  PickleReader(std::string_view data, const PickleLimits& limits) : data_(data), limits_(limits) {}

  PickleValue::Ref read() {
    if (data_.empty()) fail("the file is empty");
    if (byte() != kProto) {
      fail(
          "not a pickle of protocol 2 to 5 (no PROTO opcode first); "
          "protocols 0 and 1 are refused");
    }
    const uint8_t protocol = byte();
    if (protocol < 2 || protocol > 5) {
      fail("pickle protocol " + std::to_string(protocol) + " (this reader reads 2 to 5)");
    }
    while (true) {
      opcode_at_ = pos_;
      const uint8_t op = byte();
      if (op == kStop) return stop();
      execute(op);
    }
  }

 private:
  using Ref = PickleValue::Ref;
  using Kind = PickleValue::Kind;
  using Callable = PickleValue::Callable;

  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("at byte " + std::to_string(opcode_at_) + ": " + why);
  }

  // Input, as Python's _Unframer reads it: an opcode and its argument lie wholly inside the
  // current frame or wholly after it.
  const char* take(uint64_t n) {
    if (frame_end_ != kNoFrame) {
      if (pos_ == frame_end_) {
        frame_end_ = kNoFrame;
      } else if (n > frame_end_ - pos_) {
        fail("an opcode runs past the end of its frame");
      }
    }
    if (n > data_.size() - pos_) fail("the pickle ends in the middle of an opcode (truncated?)");
    const char* at = data_.data() + pos_;
    pos_ += n;
    return at;
  }
  uint8_t byte() {
    if (pos_ == data_.size()) fail("the pickle ends before its STOP opcode (truncated?)");
    return static_cast<uint8_t>(*take(1));
  }
  uint64_t little_endian(int bytes) {
    const auto* at = reinterpret_cast<const uint8_t*>(take(bytes));
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | at[i];
    return value;
  }
  std::string text(uint64_t length) { return std::string(take(length), length); }
  // A line of GLOBAL's argument, without its newline.
  std::string line() {
    constexpr size_t kMaxName = 128;
    std::string result;
    while (true) {
      const char c = static_cast<char>(byte());
      if (c == '\n') return result;
      if (result.size() == kMaxName) fail("GLOBAL names a module or object over 128 bytes long");
      result += c;
    }
  }

  void execute(uint8_t op) {
    switch (op) {
      case kMark:
        if (marks_.size() >= static_cast<size_t>(limits_.max_depth)) {
          fail("more than " + std::to_string(limits_.max_depth) + " MARKs open");
        }
        marks_.push_back(std::move(stack_));
        stack_.clear();
        return;
      case kNone:
        if (none_ == nullptr) none_ = std::make_shared<PickleValue>(Kind::kNone);
        return push(none_);  // one shared node, as the scalars below
      case kNewTrue:
      case kNewFalse:
        return push(scalar(Kind::kBool, op == kNewTrue ? 1 : 0));
      case kBinInt1:
        return push(scalar(Kind::kInt, byte()));
      case kBinInt2:
        return push(scalar(Kind::kInt, static_cast<int64_t>(little_endian(2))));
      case kBinInt:
        return push(scalar(Kind::kInt, static_cast<int32_t>(little_endian(4))));
      case kLong1:
        return push(long_integer(byte()));
      case kLong4:
        return push(long_integer(static_cast<int32_t>(little_endian(4))));
      case kBinFloat:
        return push(binary_float());
      case kShortBinUnicode:
        return push(string(Kind::kString, byte()));
      case kBinUnicode:
        return push(string(Kind::kString, little_endian(4)));
      case kBinUnicode8:
        return push(string(Kind::kString, little_endian(8)));
      case kShortBinBytes:
        return push(string(Kind::kBytes, byte()));
      case kBinBytes:
        return push(string(Kind::kBytes, little_endian(4)));
      case kBinBytes8:
        return push(string(Kind::kBytes, little_endian(8)));
      case kEmptyList:
      case kEmptyDict:
      case kEmptyTuple: {
        const Kind kind = op == kEmptyList   ? Kind::kList
                          : op == kEmptyDict ? Kind::kDict
                                             : Kind::kTuple;
        Ref container = std::make_shared<PickleValue>(kind);
        container->depth_ = 1;
        return push(std::move(container));
      }
      case kAppend: {
        Ref item = pop();
        PickleValue& list = container_on_top(Kind::kList, "APPEND");
        return add_item(list, std::move(item));
      }
      case kAppends: {
        std::vector<Ref> items = pop_mark();
        PickleValue& list = container_on_top(Kind::kList, "APPENDS");
        for (Ref& item : items) add_item(list, std::move(item));
        return;
      }
      case kSetItem: {
        Ref value = pop();
        Ref key = pop();
        PickleValue& dict = container_on_top(Kind::kDict, "SETITEM");
        return set_item(dict, std::move(key), std::move(value));
      }
      case kSetItems: {
        std::vector<Ref> items = pop_mark();
        if (items.size() % 2 != 0) fail("SETITEMS with a key but no value");
        PickleValue& dict = container_on_top(Kind::kDict, "SETITEMS");
        for (size_t i = 0; i < items.size(); i += 2) {
          set_item(dict, std::move(items[i]), std::move(items[i + 1]));
        }
        return;
      }
      case kTuple:
        return push(tuple(pop_mark()));
      case kTuple1:
      case kTuple2:
      case kTuple3: {
        std::vector<Ref> items(op - kTuple1 + 1);
        for (auto it = items.rbegin(); it != items.rend(); ++it) *it = pop();
        return push(tuple(std::move(items)));
      }
      case kBinPut:
        return memoize(byte());
      case kLongBinPut:
        return memoize(little_endian(4));
      case kMemoize:
        return memoize(memo_.size());
      case kBinGet:
        return push(memo_get(byte()));
      case kLongBinGet:
        return push(memo_get(little_endian(4)));
      case kFrame:
        return frame(little_endian(8));
      case kGlobal:
        return push(global());
      case kReduce: {
        Ref arguments = pop();
        Ref callable = pop();
        return push(reduce(*callable, *arguments));
      }
      case kProto:
        fail("a second PROTO opcode");
    }
    refuse(op);
  }

  [[noreturn]] void refuse(uint8_t op) const {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", op);
    for (const RefusedOpcode& refused : kRefused) {
      if (refused.code == op) {
        fail(std::string("opcode ") + code + " (" + refused.name + ") refused: " + refused.why);
      }
    }
    fail(std::string("unknown opcode ") + code + " (not a pickle, or a corrupt one)");
  }

  Ref stop() {
    if (!marks_.empty()) fail("STOP inside an unfinished MARK");
    if (stack_.size() != 1) {
      fail("STOP with " + std::to_string(stack_.size()) + " values on the stack, not one");
    }
    if (pos_ != data_.size()) fail("data after the pickle's STOP opcode");
    if (stack_.back()->callable_ != Callable::kNone) fail("the pickle is a Python function");
    return stack_.back();
  }

  void push(Ref value) { stack_.push_back(std::move(value)); }
  Ref pop() {
    if (stack_.empty()) fail("an opcode takes a value from an empty stack");
    Ref value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("an opcode needs a MARK that was never set");
    std::vector<Ref> items = std::move(stack_);
    stack_ = std::move(marks_.back());
    marks_.pop_back();
    return items;
  }
  PickleValue& container_on_top(Kind kind, const char* op) {
    if (stack_.empty() || !stack_.back()->is(kind)) {
      fail(std::string(op) + " needs a " + PickleValue::kind_name(kind) + " below its values");
    }
    return *stack_.back();
  }

  Ref scalar(Kind kind, int64_t value) {
    // Small ints (line numbers, stream 0, flags) and bools are one shared node each, as in
    // CPython: nothing changes a scalar once made.
    const bool shared = value >= 0 && value < static_cast<int64_t>(kSharedScalars);
    Ref* slot =
        shared ? &shared_scalars_[kind == Kind::kBool][static_cast<size_t>(value)] : nullptr;
    if (slot != nullptr && *slot != nullptr) return *slot;
    Ref result = std::make_shared<PickleValue>(kind);
    result->scalar_.integer = value;
    if (slot != nullptr) *slot = result;
    return result;
  }
  // LONG1 and LONG4: little-endian two's complement of `length` bytes. One wider than 64 bits
  // saturates at the int64 bound of its sign (PyTorch writes a frame's unsigned line number, so a
  // line of 2^64 - 1 is 9 bytes): a reader refuses such a figure where it matters, and the file's
  // other values are still read.
  Ref long_integer(int64_t length) {
    if (length < 0) fail("LONG4 with a negative length");
    const auto* at = reinterpret_cast<const uint8_t*>(take(static_cast<uint64_t>(length)));
    if (length == 0) return scalar(Kind::kInt, 0);
    const bool negative = (at[length - 1] & 0x80) != 0;
    const int64_t low = std::min<int64_t>(length, 8);
    uint64_t value = 0;
    for (int64_t i = low - 1; i >= 0; --i) value = (value << 8) | at[i];
    if (low < 8 && negative) value |= ~uint64_t{0} << (8 * low);  // sign extension
    // Wider: it fits only if every byte above the low 8 extends the sign of the 64-bit value.
    const uint8_t extension = (value >> 63) != 0 ? 0xff : 0x00;
    bool fits = true;
    for (int64_t i = 8; i < length && fits; ++i) fits = at[i] == extension;
    if (!fits) {
      return scalar(Kind::kInt, negative ? std::numeric_limits<int64_t>::min()
                                         : std::numeric_limits<int64_t>::max());
    }
    return scalar(Kind::kInt, static_cast<int64_t>(value));
  }
  Ref binary_float() {
    const auto* at = reinterpret_cast<const uint8_t*>(take(8));
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | at[i];  // big-endian
    Ref result = std::make_shared<PickleValue>(Kind::kFloat);
    std::memcpy(&result->scalar_.real, &bits, sizeof bits);
    return result;
  }
  Ref string(Kind kind, uint64_t length) {
    Ref result = std::make_shared<PickleValue>(kind);
    if (length > 0) result->mutable_text() = text(length);
    if (kind == Kind::kString && !is_utf8(result->text())) fail("a str that is not UTF-8");
    return result;
  }

  // What a container may hold, and the bookkeeping that keeps containers acyclic: a container
  // placed inside another is sealed, and nothing is added to a sealed one.
  void adopt(PickleValue& container, PickleValue& child) {
    if (child.callable_ != Callable::kNone) fail("a Python function used as data");
    if (container.sealed_) {
      fail(std::string("adds to a ") + container.kind_name() +
           " after using it (a container that contains itself?)");
    }
    if (child.is(Kind::kList) || child.is(Kind::kDict)) child.sealed_ = true;
    container.depth_ = std::max(container.depth_, child.depth_ + 1);
    if (container.depth_ > limits_.max_depth) {
      fail("containers nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
  }
  void add_item(PickleValue& list, Ref item) {
    adopt(list, *item);
    list.mutable_items().push_back(std::move(item));
  }
  void set_item(PickleValue& dict, Ref key, Ref value) {
    if (!hashable(*key)) fail(std::string("a dict key of type ") + key->kind_name());
    adopt(dict, *key);
    adopt(dict, *value);
    dict.mutable_entries().emplace_back(std::move(key), std::move(value));
  }
  Ref tuple(std::vector<Ref> items) {
    Ref result = std::make_shared<PickleValue>(Kind::kTuple);
    result->depth_ = 1;
    for (Ref& item : items) {
      adopt(*result, *item);
      if (!hashable(*item)) result->unhashable_ = true;
    }
    if (!items.empty()) result->mutable_items() = std::move(items);
    return result;
  }
  static bool hashable(const PickleValue& value) {
    return !value.is(Kind::kList) && !value.is(Kind::kDict) && !value.unhashable_;
  }

  void memoize(uint64_t index) {
    if (stack_.empty()) fail("a memo store with nothing on the stack");
    memo_[index] = stack_.back();
  }
  Ref memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("a memo fetch of " + std::to_string(index) + ", never stored");
    if (it->second->is(Kind::kList) || it->second->is(Kind::kDict)) it->second->sealed_ = true;
    return it->second;
  }

  void frame(uint64_t length) {
    if (frame_end_ != kNoFrame && pos_ != frame_end_) {
      fail("a FRAME begins before the end of the current one");
    }
    if (length > data_.size() - pos_) fail("a FRAME longer than the rest of the file (truncated?)");
    frame_end_ = pos_ + length;
  }

  // Protocol 2 writes bytes as `_codecs.encode(text, "latin1")`, and b"" as `bytes()`; GLOBAL may
  // name only these, and REDUCE rebuilds the bytes without calling anything.
  Ref global() {
    const std::string module = line();
    const std::string name = line();
    Ref result = std::make_shared<PickleValue>(Kind::kNone);
    if (module == "_codecs" && name == "encode") {
      result->callable_ = Callable::kCodecsEncode;
    } else if ((module == "__builtin__" || module == "builtins") && name == "bytes") {
      result->callable_ = Callable::kBytes;
    } else {
      std::string shown;
      for (char c : module + "." + name) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
      fail("opcode 0x63 (GLOBAL) refused: it names " + shown + "; " + kRunsCode);
    }
    return result;
  }
  Ref reduce(const PickleValue& callable, const PickleValue& arguments) {
    if (callable.callable_ == Callable::kNone) {
      fail(std::string("opcode 0x52 (REDUCE) refused: ") + kRunsCode);
    }
    if (!arguments.is(Kind::kTuple)) fail("REDUCE with arguments that are not a tuple");
    const std::vector<Ref>& args = arguments.items();
    Ref result = std::make_shared<PickleValue>(Kind::kBytes);
    if (callable.callable_ == Callable::kBytes) {
      if (!args.empty()) fail("bytes() rebuilt from arguments; only b\"\" is written so");
      return result;
    }
    if (args.size() != 2 || !args[0]->is(Kind::kString) || !args[1]->is(Kind::kString) ||
        args[1]->text() != "latin1") {
      fail("_codecs.encode with arguments other than (str, \"latin1\")");
    }
    const std::string& text = args[0]->text();
    for (size_t at = 0; at < text.size();) {
      uint32_t code_point = 0;
      const size_t length = utf8_sequence(text, at, &code_point);
      at += length;
      if (length == 0 || code_point > 0xff) fail("_codecs.encode of a character outside latin1");
      result->mutable_text() += static_cast<char>(code_point);
    }
    return result;
  }

  static constexpr size_t kNoFrame = static_cast<size_t>(-1);
  static constexpr size_t kSharedScalars = 1024;

  std::string_view data_;
  const PickleLimits& limits_;
  size_t pos_ = 0;
  size_t opcode_at_ = 0;
  size_t frame_end_ = kNoFrame;
  std::vector<Ref> stack_;
  std::vector<std::vector<Ref>> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
  Ref shared_scalars_[2][kSharedScalars];  // [is a bool][value]
  Ref none_;
};

PickleValue::Ref read_pickle(std::string_view data, const PickleLimits& limits) {
  return PickleReader(data, limits).read();
}

}  // namespace vramshim::analyzer
