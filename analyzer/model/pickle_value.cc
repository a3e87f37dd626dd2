#include "analyzer/model/pickle_value.h"

namespace vramshim::analyzer {

const char* PickleValue::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kBytes:
      return "bytes";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kDict:
      return "dict";
  }
  return "?";
}

PickleValue::~PickleValue() {
  if (payload_ == nullptr) return;
  if (has_text()) {
    delete static_cast<std::string*>(payload_);
  } else if (has_items()) {
    delete static_cast<std::vector<Ref>*>(payload_);
  } else if (is(Kind::kDict)) {
    delete static_cast<std::vector<Entry>*>(payload_);
  }
}

const std::string& PickleValue::text() const {
  static const std::string kEmpty;
  return payload_ != nullptr && has_text() ? *static_cast<const std::string*>(payload_) : kEmpty;
}

const std::vector<PickleValue::Ref>& PickleValue::items() const {
  static const std::vector<Ref> kEmpty;
  return payload_ != nullptr && has_items() ? *static_cast<const std::vector<Ref>*>(payload_)
                                            : kEmpty;
}

const std::vector<PickleValue::Entry>& PickleValue::entries() const {
  static const std::vector<Entry> kEmpty;
  return payload_ != nullptr && is(Kind::kDict) ? *static_cast<const std::vector<Entry>*>(payload_)
                                                : kEmpty;
}

std::string& PickleValue::mutable_text() {
  if (payload_ == nullptr) payload_ = new std::string();
  return *static_cast<std::string*>(payload_);
}

std::vector<PickleValue::Ref>& PickleValue::mutable_items() {
  if (payload_ == nullptr) payload_ = new std::vector<Ref>();
  return *static_cast<std::vector<Ref>*>(payload_);
}

std::vector<PickleValue::Entry>& PickleValue::mutable_entries() {
  if (payload_ == nullptr) payload_ = new std::vector<Entry>();
  return *static_cast<std::vector<Entry>*>(payload_);
}

const PickleValue* PickleValue::find(std::string_view key) const {
  const std::vector<Entry>& all = entries();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (it->first->is(Kind::kString) && it->first->text() == key) return it->second.get();
  }
  return nullptr;
}

}  // namespace vramshim::analyzer
