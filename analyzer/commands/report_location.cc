#include "analyzer/commands/report_location.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

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

}  // namespace vramshim::cli
