#include "boundary.hpp"

namespace convbench::bench::plugin {

std::string one_line(const char *text, const char *if_empty) {
  std::string s;
  if (text)
    for (const char *c = text; *c && s.size() < 400; ++c)
      s += (*c == '\n' || *c == '\r' || *c == '\t') ? ' ' : *c;
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s.empty() ? if_empty : s;
}

} // namespace convbench::bench::plugin
