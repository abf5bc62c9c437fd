// The round journal: JSON lines next to the result file, so that no finished round is lost to a
// kill or a crash. Line 1 is the header (the plan: argv, seed, cases, lease token); every later
// line is one finished round. Each line is written whole, then flushed and fsync'ed before
// append_round returns, so the next round starts only once this one is on disk.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/output_paths.hpp"

namespace convbench::bench {

struct JournalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class JournalWriter {
public:
  // A new journal: refuses to replace an existing file (it may hold a cut-short run's rounds).
  static JournalWriter create(const std::string &path, const nlohmann::json &header);
  // Appends to an existing journal (continuing its plan): a torn last line is cut off first, so
  // the next round starts on a line of its own.
  static JournalWriter resume(const std::string &path);
  JournalWriter(JournalWriter &&other) noexcept;
  JournalWriter &operator=(JournalWriter &&) = delete;
  JournalWriter(const JournalWriter &) = delete;
  ~JournalWriter();

  void append_round(const nlohmann::json &round); // throws JournalError on a failed write
  const std::string &path() const { return path_; }
  int rounds_written() const { return rounds_; }

private:
  JournalWriter(std::string path, std::FILE *f, int rounds);
  void write_line(const nlohmann::json &line);
  std::string path_;
  std::FILE *f_ = nullptr;
  int rounds_ = 0;
};

struct Journal {
  nlohmann::json header;              // the plan, as written
  std::vector<nlohmann::json> rounds; // every complete round, in order
  size_t torn_bytes = 0;              // bytes of an incomplete last line, ignored (0: none)
  size_t complete_bytes = 0;          // length of the header and complete rounds
};
// The header and every complete round. A last line without its newline is a write cut short by
// a kill: it is ignored and counted in torn_bytes. Anything else unreadable (no header, a
// complete line that is not a journal line) throws JournalError naming the line.
Journal read_journal(const std::string &path);

} // namespace convbench::bench
