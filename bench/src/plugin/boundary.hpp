// The C boundary: every call into a plugin goes through guarded(), which turns a status, a
// C++ exception that escaped the plugin, or an unreadable message into one line of text, and
// marks the call for the crash notice (crash_notice.hpp) while it runs.
#pragma once

#include <exception>
#include <string>

#include "convbench/arm_plugin.h"
#include "core/crash_notice.hpp"

namespace convbench::bench::plugin {

// A plugin's message, made safe to print on one line: NULL, control characters and length.
std::string one_line(const char *text, const char *if_empty = "(no message)");

// Runs `fn` (returning a convbench_status) as the plugin call `what` (e.g. "prepare"). Returns
// "" on CONVBENCH_OK; otherwise the reason: the plugin's last_error() or the exception.
// `notice` is the line the crash notice prints should the process die inside the call.
template <class Fn, class LastError>
std::string guarded(const char *what, const std::string &notice, Fn fn, LastError last_error) {
  ActiveCall active(notice);
  try {
    const int32_t st = fn();
    if (st == CONVBENCH_OK)
      return "";
    return std::string(what) + " returned status " + std::to_string(st) + ": " +
           one_line(last_error());
  } catch (const std::exception &e) {
    return std::string(what) + " threw a C++ exception across the C ABI: " + one_line(e.what());
  } catch (...) {
    return std::string(what) + " threw an exception of unknown type across the C ABI";
  }
}

} // namespace convbench::bench::plugin
