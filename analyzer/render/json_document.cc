#include "analyzer/render/json_document.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace vramshim::analyzer {

nlohmann::json json_document(const std::string& command) {
  return {{"schema_version", kJsonSchemaVersion}, {"command", command}};
}

void write_json_document(std::ostream& out, const nlohmann::json& document) {
  out << document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.flush();
  if (!out) throw std::runtime_error(std::string("standard output: ") + std::strerror(errno));
}

}  // namespace vramshim::analyzer
