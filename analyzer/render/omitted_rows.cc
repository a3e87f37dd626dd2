#include "analyzer/render/omitted_rows.h"

#include "analyzer/render/units.h"

namespace vramshim::analyzer {

std::string omitted_rows_line(size_t count, const char* one, const char* many, const char* how) {
  return "… " + format_count_of(static_cast<int64_t>(count), one, many) + " (" + how + ")";
}

}  // namespace vramshim::analyzer
