// The machine and the build, for the result's "tool" and "host" blocks.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace convbench::bench {

// 20261129T123456Z, for file names (the record's times: lease::utc_now)
std::string utc_now_compact();
std::string host_name();
std::string new_run_id();    // 32 hex digits
nlohmann::json host_block(); // name, machine_id, boot_id, cpu_model, cores, governor, unavailable
nlohmann::json tool_block();
// sha256 of this executable (null when it cannot be read).
nlohmann::json binary_sha();    // name, version, git_sha, build_type, compiler, flags, versions
double physical_memory_bytes(); // sysconf; 0 if unknown
nlohmann::json
benchmark_context(); // Google Benchmark's view of the machine: the record's "context"

} // namespace convbench::bench
