#include "record/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace convbench::bench {

namespace {

constexpr int kVersion = 1;

std::string err(const std::string &what, const std::string &path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// The directory entry of a new file survives a crash only once its directory is synced.
void sync_directory(const std::string &path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty())
    dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

JournalWriter::JournalWriter(std::string path, std::FILE *f, int rounds)
    : path_(std::move(path)), f_(f), rounds_(rounds) {}

JournalWriter::JournalWriter(JournalWriter &&o) noexcept
    : path_(std::move(o.path_)), f_(o.f_), rounds_(o.rounds_) {
  o.f_ = nullptr;
}

JournalWriter::~JournalWriter() {
  if (f_)
    std::fclose(f_);
}

JournalWriter JournalWriter::create(const std::string &path, const nlohmann::json &header) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      throw JournalError("journal " + path +
                         " exists (rounds of a run that did not finish?): resume from it or move "
                         "it away");
    throw JournalError(err("cannot create journal", path));
  }
  std::FILE *f = ::fdopen(fd, "a");
  if (!f) {
    ::close(fd);
    throw JournalError(err("cannot open journal", path));
  }
  JournalWriter w(path, f, 0);
  w.write_line({{"journal", "convbench-rounds"}, {"version", kVersion}, {"header", header}});
  sync_directory(path);
  return w;
}

JournalWriter JournalWriter::resume(const std::string &path) {
  const Journal j = read_journal(path);
  if (j.torn_bytes > 0 && ::truncate(path.c_str(), off_t(j.complete_bytes)) != 0)
    throw JournalError(err("cannot cut the torn last line of journal", path));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0)
    throw JournalError(err("cannot open journal", path));
  std::FILE *f = ::fdopen(fd, "a");
  if (!f) {
    ::close(fd);
    throw JournalError(err("cannot open journal", path));
  }
  return JournalWriter(path, f, int(j.rounds.size()));
}

void JournalWriter::write_line(const nlohmann::json &line) {
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), f_) != text.size() || std::fflush(f_) != 0 ||
      ::fsync(::fileno(f_)) != 0)
    throw JournalError(err("cannot write journal", path_));
}

void JournalWriter::append_round(const nlohmann::json &round) {
  write_line({{"round", round}});
  ++rounds_;
}

Journal read_journal(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw JournalError(err("cannot read journal", path));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  Journal j;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) { // a write cut short: ignored
      j.torn_bytes = text.size() - pos;
      break;
    }
    ++line_no;
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text.begin() + std::ptrdiff_t(pos),
                                   text.begin() + std::ptrdiff_t(nl));
    } catch (const nlohmann::json::parse_error &) {
      throw JournalError("journal " + path + ": line " + std::to_string(line_no) +
                         " is complete but not JSON");
    }
    if (line_no == 1) {
      if (!line.is_object() || line["journal"] != "convbench-rounds" || !line.contains("header"))
        throw JournalError("journal " + path + ": line 1 is not a convbench journal header");
      if (line["version"] != kVersion)
        throw JournalError("journal " + path + ": version " + line["version"].dump() +
                           ", this build reads " + std::to_string(kVersion));
      j.header = line["header"];
    } else {
      if (!line.is_object() || !line.contains("round"))
        throw JournalError("journal " + path + ": line " + std::to_string(line_no) +
                           " is not a round");
      j.rounds.push_back(line["round"]);
    }
    pos = nl + 1;
    j.complete_bytes = pos;
  }
  if (line_no == 0)
    throw JournalError("journal " + path + " has no complete header line");
  return j;
}

} // namespace convbench::bench
