// The SHA-256 of a file's bytes (OpenSSL's libcrypto), as lower-case hex: which build of a plugin
// produced a record.
#pragma once

#include <string>

namespace convbench::bench::plugin {

// Throws std::runtime_error naming the file when it cannot be read.
std::string file_sha256(const std::string &path);

} // namespace convbench::bench::plugin
