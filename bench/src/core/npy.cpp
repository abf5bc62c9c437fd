#include "core/npy.hpp"

#include <stdexcept>

#include "core/atomic_write.hpp"

namespace convbench::bench {

std::string npy_header_f32(const std::vector<int64_t> &shape) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size())
      dict += ",";
    if (i + 1 < shape.size())
      dict += " ";
  }
  dict += "), }";
  size_t unpadded = 10 + dict.size() + 1; // magic(6) + version(2) + len(2) + dict + '\n'
  size_t total = (unpadded + 63) / 64 * 64;
  dict.append(total - unpadded, ' ');
  dict += '\n';
  if (dict.size() > 65535)
    throw std::runtime_error("npy header too long");
  std::string h = "\x93NUMPY";
  h += char(1);
  h += char(0);
  h += char(dict.size() & 0xFF);
  h += char((dict.size() >> 8) & 0xFF);
  return h + dict;
}

void write_npy_f32(const std::string &path, const std::vector<int64_t> &shape, const float *data,
                   size_t count) {
  size_t expect = 1;
  for (auto d : shape)
    expect *= size_t(d);
  if (expect != count)
    throw std::runtime_error(path + ": shape does not match the element count");
  std::string h = npy_header_f32(shape);
  // A temp file renamed into place: a failed write (a full disk) leaves no truncated .npy, and an
  // existing symlink, FIFO or device at `path` is refused, never written through.
  check_writable(path, "dump file");
  TempFile f(path);
  f.write(h.data(), h.size());
  // x86-64 and aarch64 hosts are little-endian, which '<f4' states.
  f.write(data, count * sizeof(float));
  f.commit();
}

} // namespace convbench::bench
