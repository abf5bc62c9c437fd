// NPY format 1.0 writer for float32 arrays in C order, so numpy.load (or torch) reads a --dump.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace convbench::bench {

// The 1.0 header: magic, version, little-endian header length, the dict padded with spaces and a
// newline so that the data starts at a multiple of 64 bytes.
std::string npy_header_f32(const std::vector<int64_t> &shape);
// Writes header + data into a temp file renamed onto `path`; throws WriteError (a
// std::runtime_error) naming the file on failure, leaving no partial file.
void write_npy_f32(const std::string &path, const std::vector<int64_t> &shape, const float *data,
                   size_t count);

} // namespace convbench::bench
