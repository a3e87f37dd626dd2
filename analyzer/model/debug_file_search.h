// Finding a module's separate debug information for libdwfl: the file its .gnu_debuglink names,
// and the dwz file its debug information's .gnu_debugaltlink names. A report names the module, so
// the directories searched may hold anything: only regular files are opened, so that a FIFO or a
// device planted at a candidate's name cannot stall the analyzer.
#pragma once

#include <elfutils/libdwfl.h>

namespace vramshim::analyzer {

// A Dwfl_Callbacks::find_debuginfo. Tries the files elfutils 0.188's dwfl_standard_find_debuginfo
// tries, in its order: /usr/lib/debug/.build-id/xx/yyyy.debug; the debuglink name in the module's
// directory, in its .debug/ subdirectory and under /usr/lib/debug/<the module's directory>/; the
// same again for the module's real path (for a dwz file, elfutils' places for that). Accepts a file
// only if its build-id is the one sought or, for a module without one, its CRC32 is the
// debuglink's (a file over 4 GiB is passed over unread). Then, only if VRAMSHIM_DEBUGINFOD=1, asks
// the debuginfod servers of DEBUGINFOD_URLS.
// Returns the open file with its name in *debug_file_name (malloc'ed; libdwfl frees it), or -1.
int find_debug_file(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                    const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                    char** debug_file_name);

// The Dwfl_Callbacks::debuginfo_path to give with find_debug_file: a directory that cannot exist,
// so that elfutils' search, which find_debug_file runs only to reach debuginfod, finds no file.
char** debuginfod_only_path();

}  // namespace vramshim::analyzer
