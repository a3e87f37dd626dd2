#include "shim/intercept/own_definition.h"

#include <dlfcn.h>
#include <link.h>

namespace vramshim::intercept {
namespace {

link_map* object_of(const void* code) {
  Dl_info info;
  link_map* map = nullptr;
  if (code == nullptr ||
      dladdr1(code, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0) {
    return nullptr;
  }
  return map;
}

}  // namespace

bool defines_itself(const void* code, const char* name, DlsymFn lookup) {
  link_map* object = object_of(code);
  if (object == nullptr || lookup == nullptr) return true;
  // A handle searches the object first, then its dependencies; the main program's (the first
  // object) searches the global scope, where the program comes first.
  void* handle = object->l_prev == nullptr ? dlopen(nullptr, RTLD_LAZY)
                                           : dlopen(object->l_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return true;
  void* found = lookup(handle, name);
  dlclose(handle);
  return found != nullptr && object_of(found) == object;
}

bool same_object(const void* code, const void* other) {
  link_map* object = object_of(code);
  return object != nullptr && object == object_of(other);
}

}  // namespace vramshim::intercept
