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

const PickleValue* PickleValue::find(std::string_view key) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->first->kind_ == Kind::kString && it->first->text_ == key) return it->second.get();
  }
  return nullptr;
}

}  // namespace vramshim::analyzer
