// bench_conv: plugins first (their arms join the registry), then the run.
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "driver/run.hpp"
#include "plugin/plugin_args.hpp"
#include "plugin/plugin_loader.hpp"

int main(int argc, char **argv) {
  namespace plugin = convbench::bench::plugin;
  try {
    plugin::load_plugins(plugin::plugin_paths(argc, argv, std::getenv("CONVBENCH_PLUGIN_PATH")));
  } catch (const plugin::PluginPathError &e) {
    std::cerr << "bench_conv: " << e.what() << "\n";
    return 2;
  }
  const int rc = convbench::bench::run_bench_conv(argc, argv);
  for (int i = 1; rc == 0 && i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::cout << plugin::plugin_help();
      break;
    }
  return rc;
}
