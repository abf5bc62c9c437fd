// Which plugins a run loads, read before the command line is parsed so their arms are in the
// registry for --arms, the help and the record: CONVBENCH_PLUGIN_PATH (colon-separated) first,
// then every --plugin PATH / --plugin=PATH in order.
#pragma once

#include <string>
#include <vector>

namespace convbench::bench::plugin {

std::vector<std::string> plugin_paths(int argc, const char *const *argv, const char *env_path);

// Loads them all (plugin_loader.hpp). Throws PluginPathError for a path that names no file.
void load_plugins(const std::vector<std::string> &paths);

// The help's section on the arms that came from plugins ("" when none were loaded or refused).
std::string plugin_help();

} // namespace convbench::bench::plugin
