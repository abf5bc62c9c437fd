#include "plugin_loader.hpp"

#include <dlfcn.h>
#include <filesystem>
#include <iostream>
#include <memory>

#include "boundary.hpp"
#include "convbench/arm_plugin.h"
#include "core/file_sha256.hpp"
#include "plan/arm.hpp"
#include "plugin_arm.hpp"

namespace fs = std::filesystem;

namespace convbench::bench::plugin {

namespace {

std::vector<LoadReport> &reports() {
  static std::vector<LoadReport> r;
  return r;
}

constexpr size_t kMaxArms = 256;

// The library's entry point called, its table checked; "" or why the plugin is refused.
std::string open_table(const std::string &path, const convbench_plugin **table) {
  // RTLD_LOCAL: two plugins may define the same symbols. Never closed: the registry holds the
  // arms until exit.
  void *lib = nullptr;
  {
    // Its constructors run here: a crash or an exit() in one is named as this plugin's.
    const std::string loading = "bench_conv: plugin " + path + ": loading (its constructors)";
    ActiveCall active(loading);
    lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib)
    return "dlopen failed: " + one_line(dlerror());
  dlerror();
  void *sym = dlsym(lib, CONVBENCH_ARM_PLUGIN_ENTRY);
  if (!sym)
    return std::string("it exports no ") + CONVBENCH_ARM_PLUGIN_ENTRY +
           "() (build it against convbench/arm_plugin.h and define the entry point there)";
  auto entry = reinterpret_cast<convbench_arm_plugin_fn>(sym);
  const std::string why = guarded(
      CONVBENCH_ARM_PLUGIN_ENTRY, "bench_conv: plugin " + path + ": " + CONVBENCH_ARM_PLUGIN_ENTRY,
      [&] {
        *table = entry(CONVBENCH_ARM_PLUGIN_ABI_VERSION);
        return CONVBENCH_OK;
      },
      [] { return ""; });
  if (!why.empty())
    return why;
  const convbench_plugin *t = *table;
  if (!t)
    return std::string(CONVBENCH_ARM_PLUGIN_ENTRY) +
           "() returned NULL: the plugin declined ABI "
           "version " +
           std::to_string(CONVBENCH_ARM_PLUGIN_ABI_VERSION);
  if (t->abi_version != CONVBENCH_ARM_PLUGIN_ABI_VERSION)
    return "it was built for plugin ABI version " + std::to_string(t->abi_version) +
           "; this bench_conv speaks version " + std::to_string(CONVBENCH_ARM_PLUGIN_ABI_VERSION) +
           " (rebuild it against this convbench's arm_plugin.h)";
  auto size_check = [](const char *what, uint32_t theirs, size_t ours) {
    return theirs == ours ? std::string()
                          : std::string(what) + " is " + std::to_string(theirs) +
                                " bytes in the plugin, " + std::to_string(ours) +
                                " here (rebuild it against this convbench's arm_plugin.h)";
  };
  for (const std::string &s :
       {size_check("convbench_plugin", t->plugin_struct_size, sizeof(convbench_plugin)),
        size_check("convbench_arm", t->arm_struct_size, sizeof(convbench_arm)),
        size_check("convbench_problem", t->problem_struct_size, sizeof(convbench_problem))})
    if (!s.empty())
      return s;
  if (t->arm_count > kMaxArms)
    return "its table lists " + std::to_string(t->arm_count) + " arms (at most " +
           std::to_string(kMaxArms) + ")";
  if (t->arm_count && !t->arms)
    return "its table lists arms but the array is NULL";
  for (size_t i = 0; i < t->arm_count; ++i)
    if (t->arms[i].struct_size != sizeof(convbench_arm))
      return size_check("convbench_arm (an entry's struct_size)", t->arms[i].struct_size,
                        sizeof(convbench_arm));
  return "";
}

} // namespace

LoadReport load_plugin(const std::string &path_in) {
  std::error_code ec;
  if (!fs::is_regular_file(path_in, ec))
    throw PluginPathError("--plugin: no such file: " + path_in);
  LoadReport r;
  r.path = fs::canonical(path_in, ec).string();
  if (ec)
    r.path = fs::absolute(path_in).string();
  auto refuse = [&](const std::string &why) {
    r.refused = why;
    std::cerr << "bench_conv: plugin " << r.path << ": refused: " << why
              << "; the run goes on without it\n";
    reports().push_back(r);
    return r;
  };
  try {
    r.sha256 = file_sha256(r.path);
  } catch (const std::exception &e) {
    return refuse(e.what());
  }
  install_crash_notice(); // from the entry point on, a crash names the plugin
  const convbench_plugin *t = nullptr;
  if (std::string why = open_table(r.path, &t); !why.empty())
    return refuse(why);
  auto info = std::make_shared<PluginInfo>();
  info->path = r.path;
  info->sha256 = r.sha256;
  info->name = r.name = one_line(t->name, "");
  info->version = r.version = one_line(t->version, "");
  if (r.name.empty())
    return refuse("its table has no name");
  for (size_t i = 0; i < t->arm_count; ++i) {
    const convbench_arm &a = t->arms[i];
    std::string why = check_arm_entry(a);
    if (why.empty() && find_arm(a.name))
      why = std::string("arm ") + a.name +
            " has the name of an arm already registered (built-in or from an earlier plugin): "
            "rename it";
    if (!why.empty()) {
      std::cerr << "bench_conv: plugin " << r.path << ": refused " << why
                << "; the run goes on without it\n";
      r.refused_arms.push_back(why);
      continue;
    }
    register_arm(std::make_unique<PluginArm>(info, a));
    r.arms.push_back(a.name);
  }
  reports().push_back(r);
  return r;
}

const std::vector<LoadReport> &load_reports() { return reports(); }

nlohmann::json plugins_json() {
  nlohmann::json loaded = nlohmann::json::array(), refused = nlohmann::json::array();
  for (const auto &r : reports()) {
    if (!r.refused.empty()) {
      refused.push_back({{"path", r.path}, {"sha256", r.sha256}, {"why", r.refused}});
      continue;
    }
    loaded.push_back({{"path", r.path},
                      {"sha256", r.sha256},
                      {"name", r.name},
                      {"version", r.version},
                      {"arms", r.arms},
                      {"refused_arms", r.refused_arms}});
  }
  return {
      {"abi_version", CONVBENCH_ARM_PLUGIN_ABI_VERSION}, {"loaded", loaded}, {"refused", refused}};
}

} // namespace convbench::bench::plugin
