#include "core/version.hpp"

namespace convbench::bench {

std::string version_text(const std::string &tool) {
  return tool + " " + CONVBENCH_PROJECT_VERSION + " (git " + CONVBENCH_GIT_DESCRIBE + "), CUDA " +
         (CONVBENCH_CUDA_ON ? "on" : "off");
}

} // namespace convbench::bench
