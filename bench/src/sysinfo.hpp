// The machine and the build, for the result's "tool" and "host" blocks.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace convbench::bench {

std::string utc_now_iso();     // 2026-11-29T12:34:56.789Z
std::string utc_now_compact(); // 20261129T123456Z, for file names
std::string host_name();
std::string new_run_id();    // 32 hex digits
nlohmann::json host_block(); // name, machine_id, boot_id, cpu_model, cores, governor, unavailable
nlohmann::json tool_block(); // name, version, git_sha, build_type, compiler, flags, versions
double physical_memory_bytes(); // sysconf; 0 if unknown

} // namespace convbench::bench
