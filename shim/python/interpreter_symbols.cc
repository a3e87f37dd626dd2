#include "shim/python/interpreter_symbols.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstring>

#include "shim/intercept/real_dlsym.h"

namespace vramshim::python {

bool InterpreterSymbols::has_interpreter() const {
  return Py_IsInitialized != nullptr && Py_IsFinalizing != nullptr &&
         PyGILState_GetThisThreadState != nullptr && PyCode_Type != nullptr &&
         (Py_Version != nullptr || Py_GetVersion != nullptr);
}

bool InterpreterSymbols::has_flush_api() const {
  return has_interpreter() && PyGILState_Ensure != nullptr && PyGILState_Release != nullptr &&
         PyImport_GetModuleDict != nullptr && PyDict_GetItemString != nullptr &&
         PyObject_GetAttrString != nullptr && PyObject_CallObject != nullptr &&
         PyObject_CallFunctionObjArgs != nullptr && PyLong_FromLong != nullptr &&
         PyObject_IsTrue != nullptr && Py_DecRef != nullptr && PyErr_Occurred != nullptr &&
         PyErr_Fetch != nullptr && PyErr_Clear != nullptr && PyObject_Str != nullptr &&
         PyUnicode_AsUTF8 != nullptr;
}

namespace {

// The handle of a loaded libpython3.X.so, or null. dlopen with RTLD_NOLOAD only takes a new
// reference to an object that is already loaded; it never loads one. It runs after the walk:
// dl_iterate_phdr holds the loader's lock during its callbacks.
void* loaded_libpython() {
  char path[PATH_MAX] = "";
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* slash = std::strrchr(info->dlpi_name, '/');
        const char* base = slash != nullptr ? slash + 1 : info->dlpi_name;
        if (std::strncmp(base, "libpython3.", 11) != 0) return 0;
        if (std::strlen(info->dlpi_name) >= PATH_MAX) return 0;
        std::strcpy(static_cast<char*>(data), info->dlpi_name);
        return 1;
      },
      path);
  return path[0] != '\0' ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
}

template <typename T>
void resolve(intercept::DlsymFn lookup, void* handle, const char* name, T& out) {
  out = reinterpret_cast<T>(lookup(handle, name));
}

InterpreterSymbols resolve_all(intercept::DlsymFn lookup, void* handle) {
  InterpreterSymbols s;
  resolve(lookup, handle, "Py_IsInitialized", s.Py_IsInitialized);
  resolve(lookup, handle, "Py_IsFinalizing", s.Py_IsFinalizing);
  if (s.Py_IsFinalizing == nullptr) resolve(lookup, handle, "_Py_IsFinalizing", s.Py_IsFinalizing);
  resolve(lookup, handle, "PyGILState_GetThisThreadState", s.PyGILState_GetThisThreadState);
  resolve(lookup, handle, "Py_GetVersion", s.Py_GetVersion);
  resolve(lookup, handle, "Py_Version", s.Py_Version);
  resolve(lookup, handle, "PyCode_Type", s.PyCode_Type);
  resolve(lookup, handle, "_PyRuntime", s._PyRuntime);
  resolve(lookup, handle, "_PyEval_EvalFrameDefault", s._PyEval_EvalFrameDefault);
  resolve(lookup, handle, "PyGILState_Ensure", s.PyGILState_Ensure);
  resolve(lookup, handle, "PyGILState_Release", s.PyGILState_Release);
  resolve(lookup, handle, "PyImport_GetModuleDict", s.PyImport_GetModuleDict);
  resolve(lookup, handle, "PyDict_GetItemString", s.PyDict_GetItemString);
  resolve(lookup, handle, "PyObject_GetAttrString", s.PyObject_GetAttrString);
  resolve(lookup, handle, "PyObject_CallObject", s.PyObject_CallObject);
  resolve(lookup, handle, "PyObject_CallFunctionObjArgs", s.PyObject_CallFunctionObjArgs);
  resolve(lookup, handle, "PyLong_FromLong", s.PyLong_FromLong);
  resolve(lookup, handle, "PyObject_IsTrue", s.PyObject_IsTrue);
  resolve(lookup, handle, "Py_DecRef", s.Py_DecRef);
  resolve(lookup, handle, "PyErr_Occurred", s.PyErr_Occurred);
  resolve(lookup, handle, "PyErr_Fetch", s.PyErr_Fetch);
  resolve(lookup, handle, "PyErr_Clear", s.PyErr_Clear);
  resolve(lookup, handle, "PyObject_Str", s.PyObject_Str);
  resolve(lookup, handle, "PyUnicode_AsUTF8", s.PyUnicode_AsUTF8);
  return s;
}

}  // namespace

InterpreterSymbols find_interpreter_symbols() {
  const intercept::DlsymFn lookup = intercept::real_dlsym();
  if (lookup == nullptr) return {};
  if (lookup(RTLD_DEFAULT, "Py_IsInitialized") != nullptr) return resolve_all(lookup, RTLD_DEFAULT);
  // The main program's handle is never closed: dlclose on it does nothing.
  void* main_program = dlopen(nullptr, RTLD_LAZY);
  if (main_program != nullptr && lookup(main_program, "Py_IsInitialized") != nullptr) {
    return resolve_all(lookup, main_program);
  }
  // Kept open for the life of the process: the symbols point into it.
  void* libpython = loaded_libpython();
  if (libpython != nullptr && lookup(libpython, "Py_IsInitialized") != nullptr) {
    return resolve_all(lookup, libpython);
  }
  if (libpython != nullptr) dlclose(libpython);
  return {};
}

}  // namespace vramshim::python
