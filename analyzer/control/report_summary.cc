#include "analyzer/control/report_summary.h"

#include <cxxabi.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "analyzer/control/human_size.h"

namespace vramshim::cli {
namespace {

// A pattern piece: literal text, or (empty text) a wildcard that matches any run of characters.
struct Piece {
  bool wildcard;
  std::string text;
};

bool matches(const std::vector<Piece>& pieces, size_t piece, const std::string& name, size_t at) {
  if (piece == pieces.size()) return at == name.size();
  if (!pieces[piece].wildcard) {
    const std::string& text = pieces[piece].text;
    return name.compare(at, text.size(), text) == 0 &&
           matches(pieces, piece + 1, name, at + text.size());
  }
  for (size_t end = at; end <= name.size(); ++end) {
    if (matches(pieces, piece + 1, name, end)) return true;
  }
  return false;
}

std::string demangled(const std::string& name) {
  int status = 0;
  char* readable = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return name;
  std::string result = readable;
  std::free(readable);
  return result;
}

std::uint64_t number(const nlohmann::json& object, const char* key) {
  if (!object.is_object() || !object.contains(key) || !object[key].is_number()) return 0;
  return static_cast<std::uint64_t>(object[key].get<double>());
}

// Elements of a report array by their "id".
std::map<std::int64_t, const nlohmann::json*> by_id(const nlohmann::json& report, const char* key) {
  std::map<std::int64_t, const nlohmann::json*> table;
  if (!report.contains(key) || !report[key].is_array()) return table;
  for (const nlohmann::json& element : report[key]) {
    if (element.is_object() && element.contains("id") && element["id"].is_number_integer()) {
      table[element["id"].get<std::int64_t>()] = &element;
    }
  }
  return table;
}

std::string frame_name(const nlohmann::json& frame,
                       const std::map<std::int64_t, const nlohmann::json*>& modules) {
  if (frame.contains("function") && frame["function"].is_string()) {
    return demangled(frame["function"].get<std::string>());
  }
  const std::int64_t module = frame.value("module", std::int64_t{-1});
  char offset[32];
  std::snprintf(offset, sizeof(offset), "0x%llx",
                static_cast<unsigned long long>(number(frame, "offset")));
  const auto found = modules.find(module);
  if (found == modules.end() || !found->second->contains("path")) return offset;
  std::string path = found->second->value("path", std::string());
  return path.substr(path.rfind('/') + 1) + "+" + offset;
}

}  // namespace

std::optional<std::string> find_report(const std::string& pattern, pid_t pid) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::vector<Piece> pieces;
  auto literal = [&](const std::string& text) {
    if (pieces.empty() || pieces.back().wildcard) pieces.push_back({false, ""});
    pieces.back().text += text;
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      literal(std::string(1, pattern[i]));
      continue;
    }
    const char code = pattern[++i];
    if (code == 'p') {
      literal(std::to_string(pid));
    } else if (code == 'h') {
      literal(host);
    } else if (code == '%') {
      literal("%");
    } else if (code == 'r' || code == 't' || code == 'n') {
      pieces.push_back({true, ""});
    } else {
      literal(std::string("%") + code);
    }
  }
  // Split off the directory: wildcards are matched in the file name only.
  std::string directory = ".";
  if (!pieces.empty() && !pieces.front().wildcard) {
    const size_t slash = pieces.front().text.rfind('/');
    if (slash != std::string::npos) {
      directory = slash == 0 ? "/" : pieces.front().text.substr(0, slash);
      pieces.front().text.erase(0, slash + 1);
    }
  }
  for (const Piece& piece : pieces) {
    if (!piece.wildcard && piece.text.find('/') != std::string::npos) return std::nullopt;
  }

  std::optional<std::string> newest;
  struct timespec newest_time = {};
  DIR* listing = ::opendir(directory.c_str());
  if (listing == nullptr) return std::nullopt;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || !matches(pieces, 0, name, 0)) continue;
    const std::string path = directory == "." ? name : directory + "/" + name;
    struct stat info;
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    const auto& time = info.st_mtim;
    if (!newest || time.tv_sec > newest_time.tv_sec ||
        (time.tv_sec == newest_time.tv_sec && time.tv_nsec > newest_time.tv_nsec)) {
      newest = path;
      newest_time = time;
    }
  }
  ::closedir(listing);
  return newest;
}

std::string summarize_report(const nlohmann::json& report) {
  const auto modules = by_id(report, "modules");
  const auto frames = by_id(report, "frames");
  const auto stacks = by_id(report, "stacks");
  const nlohmann::json sites = report.contains("sites") && report["sites"].is_array()
                                   ? report["sites"]
                                   : nlohmann::json::array();

  std::uint64_t live_bytes = 0, live_count = 0;
  for (const nlohmann::json& site : sites) {
    live_bytes += number(site, "live_bytes");
    live_count += number(site, "live_count");
  }
  const std::uint64_t peak = number(report.value("peak", nlohmann::json::object()), "in_use_bytes");

  std::string text = "  live at exit: " + human_size(live_bytes) + " in " +
                     std::to_string(live_count) +
                     (live_count == 1 ? " allocation\n" : " allocations\n");
  text += "  peak in use:  " + human_size(peak) + "\n";

  std::vector<const nlohmann::json*> top;
  for (const nlohmann::json& site : sites) {
    if (number(site, "bytes_at_peak") > 0) top.push_back(&site);
  }
  std::sort(top.begin(), top.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
    return number(*a, "bytes_at_peak") > number(*b, "bytes_at_peak");
  });
  if (top.size() > 5) top.resize(5);
  if (!top.empty()) text += "  top sites at peak:\n";
  for (const nlohmann::json* site : top) {
    std::string where;
    const std::int64_t stack_id = site->value("stack", std::int64_t{-1});
    const auto stack = stacks.find(stack_id);
    if (stack != stacks.end() && stack->second->contains("frames")) {
      int shown = 0;
      for (const nlohmann::json& frame_id : (*stack->second)["frames"]) {
        if (!frame_id.is_number_integer()) continue;
        const auto frame = frames.find(frame_id.get<std::int64_t>());
        if (frame == frames.end()) continue;
        where += (shown == 0 ? "" : " < ") + frame_name(*frame->second, modules);
        if (++shown == 3) break;
      }
    }
    if (where.empty()) where = "(no stack)";
    char size[24];
    std::snprintf(size, sizeof(size), "%10s", human_size(number(*site, "bytes_at_peak")).c_str());
    text += std::string("    ") + size + "  " + site->value("kind", std::string("?")) + "  " +
            where + "\n";
  }
  return text;
}

}  // namespace vramshim::cli
