#include "plugin_args.hpp"

#include <sstream>

#include "plan/arm.hpp"
#include "plugin_loader.hpp"

namespace convbench::bench::plugin {

std::vector<std::string> plugin_paths(int argc, const char *const *argv, const char *env_path) {
  std::vector<std::string> out;
  if (env_path) {
    std::stringstream ss(env_path);
    for (std::string item; std::getline(ss, item, ':');)
      if (!item.empty())
        out.push_back(item);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--plugin=", 0) == 0) {
      if (a.size() > 9)
        out.push_back(a.substr(9));
    } else if (a == "--plugin" && i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      out.push_back(argv[++i]); // a missing value is the command line's error to report
    }
  }
  return out;
}

void load_plugins(const std::vector<std::string> &paths) {
  for (const auto &p : paths)
    load_plugin(p);
}

std::string plugin_help() {
  const auto &reports = load_reports();
  if (reports.empty())
    return "";
  std::string s = "\nArms from plugins (--plugin, CONVBENCH_PLUGIN_PATH):\n";
  for (const auto &r : reports) {
    if (!r.refused.empty()) {
      s += "  " + r.path + ": refused: " + r.refused + "\n";
      continue;
    }
    s += "  " + r.path + " (" + r.name + " " + r.version + "):";
    for (const auto &name : r.arms) {
      const Arm *a = find_arm(name);
      s += " " + name + (a && a->device() ? " [CUDA]" : " [host]");
    }
    s += r.arms.empty() ? " no arms\n" : "\n";
  }
  return s;
}

} // namespace convbench::bench::plugin
