// The documents of the CLI's `--format json` (docs/cli-json.md): one JSON object per command run,
// with "schema_version" and "command" beside its data, written whole to standard output once the
// command has done its job, so that a command that fails leaves standard output empty.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace vramshim::analyzer {

// Raised when a member is removed or renamed, or its meaning or unit changes; adding members keeps
// it (docs/cli-json.md, "Versions").
inline constexpr int kJsonSchemaVersion = 1;

// {"schema_version": kJsonSchemaVersion, "command": command}: what every document holds.
nlohmann::json json_document(const std::string& command);

// Writes `document` on one line, and a newline, to `out` and flushes it; text that is not UTF-8 is
// written with U+FFFD in its place. Throws std::runtime_error("standard output: …") when `out`
// fails.
void write_json_document(std::ostream& out, const nlohmann::json& document);

}  // namespace vramshim::analyzer
