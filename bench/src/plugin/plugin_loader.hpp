// Loading plugins: dlopen, the entry point, the ABI version and struct sizes, each arm's table
// entry, and registration in the arms registry. A bad plugin or arm is refused with one line on
// stderr; the run goes on without it.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace convbench::bench::plugin {

// A --plugin path that names no file: bad usage (exit 2, nothing run), not a bad plugin.
class PluginPathError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct LoadReport {
  std::string path;   // absolute
  std::string sha256; // empty when the file could not be read
  std::string name, version;
  std::string refused;                   // why the whole plugin was refused; empty when it loaded
  std::vector<std::string> arms;         // registered
  std::vector<std::string> refused_arms; // "<why>" per refused table entry
};

// Loads one plugin and registers its acceptable arms. Throws PluginPathError only when `path`
// is not a file; every other fault is a refusal, said on stderr and returned.
LoadReport load_plugin(const std::string &path);

// Every plugin loaded or refused so far, in order, for the help and the record.
const std::vector<LoadReport> &load_reports();
// {"loaded": [{path, sha256, name, version, arms}], "refused": [{path, sha256, why}]}, with the
// refused arms of loaded plugins under "refused_arms".
nlohmann::json plugins_json();

} // namespace convbench::bench::plugin
