// The embedded default authority for one host: flock on ONE canonical lock file per machine and
// resource. Who may disturb a hold is kept to root and the holder:
// - the lock file (the mutex) is created 0644 by its first user and only ever opened for reading
//   (flock needs no write access), so nobody else can write into it; one owned by another
//   non-root user (who could unlink or replace it under a holder, or make it unreadable) is
//   refused with its owner named, as is a lock directory that such a user owns or that lets
//   anyone replace files (world-writable without the sticky bit);
// - the fencing token (a generation) and the holder record live in a holder file per user,
//   <machine>-<resource>.<uid>.holder, owned by that user and replaced atomically (temp file,
//   rename) by them alone. A grant takes 1 + the highest generation in any user's holder file
//   (and in the lock file itself, where older versions kept it), so tokens only grow; a corrupt
//   holder file is refused by name rather than read as 0, and a generation at INT64_MAX refuses
//   further grants rather than wrapping.
// Verify compares the held descriptor's inode with the path's (a lock file replaced under us is a
// second mutex) and reads the holder's own file: other users' files cannot void a hold.
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <thread>

#include "convbench/lease/lease.hpp"

namespace convbench::lease {
namespace {

using nlohmann::json;

constexpr const char *kDefaultDir = kDefaultLockDir;

std::string errno_text() { return std::strerror(errno); }

bool under(const std::string &path, const std::string &root) {
  if (root.empty() || root == "/")
    return false;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/')
    r.pop_back();
  return path == r || path.rfind(r + "/", 0) == 0;
}

// The nearest existing ancestor's real path + the rest, so symlinks into a home are caught too.
std::string resolved(const std::string &path) {
  std::string head = path, tail;
  while (!head.empty()) {
    char buf[PATH_MAX];
    if (::realpath(head.c_str(), buf))
      return std::string(buf) + tail;
    auto slash = head.rfind('/');
    if (slash == std::string::npos || slash == 0)
      break;
    tail = head.substr(slash) + tail;
    head = head.substr(0, slash);
  }
  return path;
}

void refuse_home(const std::string &dir) {
  std::vector<std::string> homes = {"/home", "/root"};
  if (const char *h = std::getenv("HOME"); h && *h)
    homes.push_back(h);
  if (struct passwd *pw = ::getpwuid(::geteuid()); pw && pw->pw_dir)
    homes.push_back(pw->pw_dir);
  for (const std::string &p : {dir, resolved(dir)})
    for (const auto &home : homes)
      if (under(p, home) || under(p, resolved(home)))
        throw LeaseRefused("lock directory " + dir + " is under the home directory " + home +
                           ": a per-user lock is a second mutex that other users and the fleet "
                           "never see (the two-mutex failure, where neither lock excluded the "
                           "other). Use a shared system path such as " +
                           std::string(kDefaultDir) + " (CONVBENCH_LEASE_DIR)");
}

void ensure_dir(const std::string &dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      throw LeaseRefused("lock directory " + dir + " is not a directory");
    return;
  }
  // Create missing parents 0755 and the directory itself sticky + world-writable (like /tmp),
  // so every user on the host locks the same files.
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    std::string part = dir.substr(0, pos);
    bool last = pos == std::string::npos;
    if (::mkdir(part.c_str(), last ? 01777 : 0755) != 0 && errno != EEXIST)
      throw LeaseRefused("cannot create the lock directory " + dir + " (" + part + ": " +
                         errno_text() +
                         "); create it once for all users: sudo install -d -m 1777 " + dir +
                         ", or point CONVBENCH_LEASE_DIR at a shared non-home directory");
    if (last)
      ::chmod(part.c_str(), 01777);
  }
}

std::string safe_name(std::string s) {
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      c = '_';
  return s;
}

json parse_record(const std::string &buf) {
  if (buf.empty())
    return json::object();
  try {
    return json::parse(buf);
  } catch (...) {
    return json{{"unreadable", buf.substr(0, 200)}};
  }
}

std::string read_fd(int fd) {
  std::string buf;
  char chunk[4096];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, chunk, sizeof chunk, off);
    if (n <= 0)
      break;
    buf.append(chunk, n);
    off += n;
    if (buf.size() > (1u << 20))
      break; // a record is a few hundred bytes
  }
  return buf;
}

std::string owner_name(uid_t uid) {
  struct passwd *pw = ::getpwuid(uid);
  return (pw && pw->pw_name ? std::string(pw->pw_name) + " " : std::string()) + "(uid " +
         std::to_string(uid) + ")";
}

// Root, and ourselves: the only owners whose files can be trusted not to be removed, replaced or
// made unreadable under a hold.
bool trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

void check_dir_trust(const std::string &dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw LeaseRefused("cannot stat the lock directory " + dir + ": " + errno_text());
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    throw LeaseRefused("lock directory " + dir +
                       " is writable by other users without the sticky bit: anyone could "
                       "replace its lock files (a second mutex); sudo chmod 1777 " +
                       dir);
  if (!trusted_owner(st.st_uid))
    throw LeaseRefused("lock directory " + dir + " is owned by " + owner_name(st.st_uid) +
                       ", not by root or you: its owner can remove any lock file in it under a "
                       "holder; have root create it once for all users: sudo install -d -m 1777 " +
                       dir);
}

// A lock file planted as another user's (or a symlink, a FIFO) is refused: it is the mutex.
void check_lock_trust(int fd, const std::string &path) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw LeaseRefused("cannot stat lock file " + path + ": " + errno_text());
  if (!S_ISREG(st.st_mode))
    throw LeaseRefused("lock file " + path + " is not a regular file: remove it (as its owner, " +
                       owner_name(st.st_uid) + ", or root)");
  if (!trusted_owner(st.st_uid))
    throw LeaseRefused("lock file " + path + " is owned by " + owner_name(st.st_uid) +
                       ", not by root or you: its owner could remove or replace it under a "
                       "holder (voiding the run) or make it unreadable (refusing everyone). "
                       "Have root create it for all users: sudo install -m 0644 /dev/null " +
                       path);
  if ((st.st_mode & 022) && st.st_uid == ::geteuid())
    ::fchmod(fd, 0644); // one of ours from a version that made it 0666: others write nothing
}

// Opens (creating 0644 if absent) the lock file for flock; never through a symlink, never
// blocking on a FIFO planted at the path.
int open_lock(const std::string &path) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::fchmod(fd, 0644); // readable by every user whatever the umask: they lock it too
      return fd;
    }
    if (errno != EEXIST)
      throw LeaseRefused("cannot create lock file " + path + ": " + errno_text());
    fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      try {
        check_lock_trust(fd, path);
      } catch (...) {
        ::close(fd);
        throw;
      }
      return fd;
    }
    if (errno == ENOENT)
      continue; // removed between the two opens
    const int err = errno;
    struct stat st {};
    const bool have = ::lstat(path.c_str(), &st) == 0;
    if (err == ELOOP && have && S_ISLNK(st.st_mode))
      throw LeaseRefused("lock file " + path + " is a symbolic link (owned by " +
                         owner_name(st.st_uid) + "): a lock file is never followed; remove it");
    throw LeaseRefused("cannot open lock file " + path + ": " + std::strerror(err) +
                       (have ? " (owned by " + owner_name(st.st_uid) + ")" : std::string()));
  }
  throw LeaseRefused("lock file " + path + " keeps disappearing: another process removes it");
}

// One user's holder file: the generation and the holder of the last grant to that user.
struct HolderFile {
  std::string path;
  uid_t uid = 0;
  json rec = json::object();
  long long generation = 0;
};

std::optional<long long> generation_in(const json &rec) {
  auto it = rec.find("generation");
  if (it == rec.end() || !it->is_number_integer())
    return std::nullopt;
  const long long g = it->get<long long>();
  return g >= 0 ? std::optional<long long>(g) : std::nullopt;
}

// Reads one holder file as its owner wrote it. nullopt: absent, or not that user's (a file named
// for uid X but owned by another user is a forgery and is ignored). Throws on a corrupt one.
std::optional<HolderFile> read_holder_file(const std::string &path, uid_t uid) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return std::nullopt;
  struct stat st {};
  const bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid;
  const std::string buf = ok ? read_fd(fd) : std::string();
  ::close(fd);
  if (!ok)
    return std::nullopt;
  HolderFile h{path, uid, parse_record(buf), 0};
  auto g = h.rec.is_object() ? generation_in(h.rec) : std::nullopt;
  if (!g)
    throw LeaseRefused("lock state file " + path + " (owned by " + owner_name(uid) +
                       ") is corrupt (no generation): the next token could repeat one already "
                       "granted, so nothing is granted; its owner or root removes it once no run "
                       "holds the resource");
  h.generation = *g;
  return h;
}

// The lock's state: every user's holder file, the one with the highest generation first.
struct LockState {
  std::optional<HolderFile> latest; // the last grant
  long long generation = 0;         // the highest granted, over every file
};

LockState read_state(const std::string &lock_path, int lock_fd) {
  LockState s;
  // Older versions kept {generation, holder} in the lock file itself: a floor for the tokens.
  const std::string legacy = lock_fd >= 0 ? read_fd(lock_fd) : [&] {
    int fd = ::open(lock_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    std::string b = fd >= 0 ? read_fd(fd) : std::string();
    if (fd >= 0)
      ::close(fd);
    return b;
  }();
  if (!legacy.empty()) {
    json rec = parse_record(legacy);
    auto g = rec.is_object() ? generation_in(rec) : std::nullopt;
    if (!g)
      throw LeaseRefused("lock file " + lock_path +
                         " holds a corrupt record (no generation): the next token could repeat "
                         "one already granted, so nothing is granted; root or its owner removes "
                         "it once no run holds the resource");
    s.generation = *g;
  }
  const std::string dir = lock_path.substr(0, lock_path.rfind('/'));
  const std::string base = lock_path.substr(dir.size() + 1, lock_path.size() - dir.size() - 6);
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    throw LeaseRefused("cannot read the lock directory " + dir + ": " + errno_text());
  std::vector<std::pair<std::string, uid_t>> files;
  while (struct dirent *e = ::readdir(d)) {
    const std::string n = e->d_name;
    const std::string tail = ".holder";
    if (n.size() <= base.size() + 1 + tail.size() || n.compare(0, base.size() + 1, base + ".") ||
        n.compare(n.size() - tail.size(), tail.size(), tail))
      continue;
    const std::string uid = n.substr(base.size() + 1, n.size() - base.size() - 1 - tail.size());
    if (uid.empty() || uid.size() > 10 ||
        !std::all_of(uid.begin(), uid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    files.emplace_back(dir + "/" + n, static_cast<uid_t>(std::stoull(uid)));
  }
  ::closedir(d);
  for (const auto &[path, uid] : files) {
    auto h = read_holder_file(path, uid);
    if (!h)
      continue;
    if (!s.latest || h->generation > s.latest->generation)
      s.latest = h;
    s.generation = std::max(s.generation, h->generation);
  }
  return s;
}

std::string holder_path_for(const std::string &lock_path, uid_t uid) {
  return lock_path.substr(0, lock_path.size() - 5) + "." + std::to_string(uid) + ".holder";
}

// Replaces our holder file: a temp file created exclusively beside it, then rename(2), so a
// reader sees the old record or the new one, and nobody else's file is ever written.
bool write_holder_file(const std::string &path, const json &rec, std::string *why) {
  const std::string tmp_tpl =
      path.substr(0, path.rfind('/') + 1) + "." + path.substr(path.rfind('/') + 1) + ".XXXXXX";
  std::vector<char> tmp(tmp_tpl.begin(), tmp_tpl.end());
  tmp.push_back('\0');
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC); // O_EXCL, 0600, no symlink followed
  if (fd < 0) {
    *why = "cannot create a temp file beside " + path + ": " + errno_text();
    return false;
  }
  const std::string s = rec.dump() + "\n";
  bool ok = ::fchmod(fd, 0644) == 0 &&
            ::write(fd, s.data(), s.size()) == static_cast<ssize_t>(s.size()) && ::fsync(fd) == 0;
  int err = errno;
  ok = ::close(fd) == 0 && ok;
  if (ok && ::rename(tmp.data(), path.c_str()) != 0) {
    err = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(tmp.data());
    struct stat st {};
    *why = "cannot write the holder file " + path + ": " + std::strerror(err);
    if (::lstat(path.c_str(), &st) == 0 && st.st_uid != ::geteuid())
      *why +=
          " (a file owned by " + owner_name(st.st_uid) + " is at its path; it or root removes it)";
    return false;
  }
  return true;
}

// A record naming a holder whose process is alive (the record of the lock's current holder).
bool names_live_holder(const json &rec) {
  auto h = rec.find("holder");
  if (h == rec.end() || !h->is_object())
    return false;
  auto pid = h->find("pid");
  return pid != h->end() && pid->is_number_integer() && pid_alive(pid->get<long>());
}

std::string describe_record(const json &rec) {
  if (rec.contains("unreadable"))
    return "a holder whose record is unreadable";
  auto h = rec.find("holder");
  if (h == rec.end() || !h->is_object())
    return "an unknown holder (no record yet)";
  auto g = generation_in(rec);
  return Holder::from_json(*h).describe() + " (token " + std::to_string(g ? *g : 0) + ")";
}

// True when some open file description holds a flock on path (probe with a fresh descriptor).
bool lock_is_held(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd); // closing drops the probe's lock if it got one
  return held;
}

class FileLease final : public Lease {
public:
  // Owned: fd holds the flock. Adopted: fd = -1, owner_pid is the process that holds it.
  FileLease(int fd, std::string path, std::string holder_path, uid_t holder_uid, dev_t dev,
            ino_t ino, long long gen, Resource r, Holder h, double ttl, bool adopted)
      : fd_(fd), path_(std::move(path)), holder_path_(std::move(holder_path)),
        holder_uid_(holder_uid), dev_(dev), ino_(ino), gen_(gen), res_(std::move(r)),
        holder_(std::move(h)), ttl_(ttl), adopted_(adopted) {}
  ~FileLease() override { release(); }

  std::string backend() const override { return "file"; }
  const Resource &resource() const override { return res_; }
  const Holder &holder() const override { return holder_; }
  std::string token() const override { return std::to_string(gen_); }
  double ttl_s() const override { return ttl_; }
  bool expires() const override { return false; }

  Check verify() override {
    Check c;
    c.at_utc = utc_now();
    c.detail = check();
    c.ok = c.detail.empty();
    if (c.ok)
      c.detail = "lock " + path_ + " inode " + std::to_string(ino_) + " held by pid " +
                 std::to_string(holder_.pid) + ", generation " + std::to_string(gen_);
    return c;
  }
  Check renew() override { return verify(); } // a flock does not lapse while its holder lives

  void release() override {
    if (fd_ < 0)
      return;
    // Leave the generation (the next holder bumps it) and say the hold ended, if it is still ours.
    if (check().empty()) {
      json rec = record();
      rec["holder"] = nullptr;
      rec["released_utc"] = utc_now();
      std::string why;
      write_holder_file(holder_path_, rec, &why);
    }
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
    fd_ = -1;
  }

  json describe() const override {
    return {{"backend", "file"},
            {"resource", res_.to_json()},
            {"holder", holder_.to_json()},
            {"token", token()},
            {"ttl_s", ttl_},
            {"adopted", adopted_},
            {"fencing",
             {{"kind", "generation"},
              {"generation", gen_},
              {"lock_path", path_},
              {"holder_path", holder_path_},
              {"dev", static_cast<unsigned long long>(dev_)},
              {"inode", static_cast<unsigned long long>(ino_)}}}};
  }

  std::string export_env() const override {
    return json{{"backend", "file"},
                {"resource", res_.to_json()},
                {"token", token()},
                {"holder", holder_.to_json()},
                {"ttl_s", ttl_},
                {"lock_path", path_},
                {"holder_path", holder_path_},
                {"holder_uid", static_cast<unsigned long long>(holder_uid_)},
                {"dev", static_cast<unsigned long long>(dev_)},
                {"inode", static_cast<unsigned long long>(ino_)}}
        .dump();
  }

  json record() const {
    return {{"generation", gen_},
            {"resource", res_.to_json()},
            {"holder", holder_.to_json()},
            {"ttl_s", ttl_}};
  }

private:
  // Empty when the hold is intact; otherwise why not.
  std::string check() const {
    struct stat held {
    }, now{};
    if (fd_ >= 0) {
      if (::fstat(fd_, &held) != 0)
        return "fstat of the held lock descriptor failed: " + errno_text();
      if (held.st_nlink == 0)
        return "lock file " + path_ +
               " was unlinked while held: a new file at that path is a "
               "second mutex that excludes nothing";
    }
    if (::lstat(path_.c_str(), &now) != 0)
      return "lock file " + path_ + " is gone (" + errno_text() + ")";
    if (now.st_dev != dev_ || now.st_ino != ino_)
      return "lock file " + path_ + " was replaced (held inode " + std::to_string(ino_) +
             ", path now inode " + std::to_string(now.st_ino) +
             "): another process can lock the new file, a second mutex";
    std::optional<HolderFile> mine;
    try {
      mine = read_holder_file(holder_path_, holder_uid_);
    } catch (const LeaseRefused &e) {
      return e.what();
    }
    if (!mine)
      return "the holder file " + holder_path_ + " of " + owner_name(holder_uid_) +
             " is gone or not theirs";
    if (mine->generation != gen_)
      return "token changed: the holder's generation is " + std::to_string(mine->generation) +
             ", ours is " + std::to_string(gen_) + " (now " + describe_record(mine->rec) + ")";
    Holder h = Holder::from_json(mine->rec.value("holder", json()));
    if (h.pid != holder_.pid || h.run_id != holder_.run_id)
      return "the holder file " + holder_path_ + " names " + describe_record(mine->rec) +
             ", not the holder pid " + std::to_string(holder_.pid);
    if (fd_ < 0) {
      // Adopted: the token is only worth something if its holder is alive, is the process that
      // started us (convlease), and really holds the flock.
      if (!pid_alive(holder_.pid))
        return "holder pid " + std::to_string(holder_.pid) + " is dead";
      if (!is_ancestor(holder_.pid))
        return "holder pid " + std::to_string(holder_.pid) +
               " is not an ancestor of this process: the inherited lease is not ours";
      if (!lock_is_held(path_))
        return "nobody holds the flock on " + path_;
    }
    return "";
  }

  int fd_;
  std::string path_, holder_path_;
  uid_t holder_uid_;
  dev_t dev_;
  ino_t ino_;
  long long gen_;
  Resource res_;
  Holder holder_;
  double ttl_;
  bool adopted_;
};

class FileBackend final : public Backend {
public:
  explicit FileBackend(const Policy &p) : policy_(p) {
    for (const std::string &named : {p.site_backend, p.backend})
      if (!named.empty() && named != "file" && is_fleet_backend(named))
        throw LeaseRefused("the site lease policy (" + p.source + ") names the '" + named +
                           "' authority; the file backend refuses to act beside it: a local "
                           "lock the fleet never sees is a second mutex (the two-mutex "
                           "failure). Run under the '" +
                           named + "' backend");
    dir_ = file_lock_dir(p).dir;
    if (dir_.empty() || dir_[0] != '/')
      throw LeaseRefused("lock directory must be an absolute path, got '" + dir_ + "'");
    refuse_home(dir_);
  }

  std::string name() const override { return "file"; }

  // The newest holder record of a lock (for a refusal's words; a corrupt state reads as unknown).
  static json latest_record(const std::string &path) {
    try {
      LockState st = read_state(path, -1);
      return st.latest ? st.latest->rec : json::object();
    } catch (const LeaseRefused &) {
      return json{{"unreadable", "corrupt"}};
    }
  }

  std::string path_for(const Resource &r) const {
    return dir_ + "/" + safe_name(r.machine_id) + "-" + safe_name(r.name()) + ".lock";
  }

  std::unique_ptr<Lease> acquire(const AcquireRequest &req) override {
    ensure_dir(dir_);
    check_dir_trust(dir_);
    const std::string path = path_for(req.resource);
    const std::string holder_path = holder_path_for(path, ::geteuid());
    const double ttl = req.ttl_s > 0 ? req.ttl_s : policy_.ttl_s;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(req.wait_s));
    auto backoff = std::chrono::milliseconds(20);
    for (;;) {
      int fd = open_lock(path);
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        struct stat held {
        }, now{};
        // The file may have been unlinked or replaced between our open and our flock: then we
        // hold a lock nobody else will look at. Start over on the current file.
        if (::fstat(fd, &held) != 0 || held.st_nlink == 0 || ::lstat(path.c_str(), &now) != 0 ||
            now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
          ::close(fd);
          continue;
        }
        LockState state;
        try {
          state = read_state(path, fd);
        } catch (...) {
          ::close(fd);
          throw;
        }
        if (state.generation == std::numeric_limits<long long>::max()) {
          ::close(fd);
          throw LeaseRefused(
              "the fencing token of " + req.resource.name() + " has reached its maximum (" +
              std::to_string(state.generation) + (state.latest ? " in " + state.latest->path : "") +
              "): a further grant could not be told apart from the last, so none is made; root "
              "removes the lock's state files once no run holds it");
        }
        const long long gen = state.generation + 1;
        Holder h = req.holder;
        h.acquired_utc = utc_now();
        auto lease = std::make_unique<FileLease>(fd, path, holder_path, ::geteuid(), held.st_dev,
                                                 held.st_ino, gen, req.resource, h, ttl, false);
        std::string why;
        if (!write_holder_file(holder_path, lease->record(), &why))
          throw LeaseRefused(why); // the lease's destructor drops the flock
        return lease;
      }
      int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        throw LeaseRefused("flock " + path + " failed: " + std::strerror(err));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        ::close(fd);
        // The winner writes its record just after taking the lock: read in between, the files
        // hold no record yet or the previous holder's (seen on CI: "an unknown holder"). A held
        // lock always gets a live holder's record within moments, so wait briefly for it.
        json rec = latest_record(path);
        for (int i = 0; i < 50 && !names_live_holder(rec); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          rec = latest_record(path);
        }
        throw LeaseBusy(req.resource.name() + " on " + req.resource.host + " is busy: lock " +
                        path + " is held by " + describe_record(rec) +
                        (req.wait_s > 0 ? " (waited " + std::to_string(req.wait_s) + " s)" : ""));
      }
      ::close(fd);
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
    }
  }

  std::unique_ptr<Lease> adopt(const json &j) override {
    Resource r = Resource::from_json(j.value("resource", json::object()));
    std::string path = j.value("lock_path", "");
    // The authority is this process's own policy, never the environment: the paths must be the
    // canonical ones for the resource.
    if (path != path_for(r))
      throw LeaseRefused("inherited file lease names lock " + path +
                         ", but the canonical lock for " + r.name() + " here is " + path_for(r));
    const auto uid_j = j.find("holder_uid");
    if (uid_j == j.end() || !uid_j->is_number_unsigned())
      throw LeaseRefused("inherited file lease names no holder uid");
    const uid_t uid = static_cast<uid_t>(uid_j->get<unsigned long long>());
    const std::string holder_path = holder_path_for(path, uid);
    if (j.value("holder_path", "") != holder_path)
      throw LeaseRefused("inherited file lease names the holder file " +
                         j.value("holder_path", "") + ", but the canonical one is " + holder_path);
    long long gen = 0;
    try {
      gen = std::stoll(j.value("token", ""));
    } catch (...) {
      throw LeaseRefused("inherited file lease has no numeric token");
    }
    auto lease = std::make_unique<FileLease>(-1, path, holder_path, uid,
                                             static_cast<dev_t>(j.value("dev", 0ULL)),
                                             static_cast<ino_t>(j.value("inode", 0ULL)), gen, r,
                                             Holder::from_json(j.value("holder", json::object())),
                                             j.value("ttl_s", policy_.ttl_s), true);
    Check c = lease->verify();
    if (!c.ok)
      throw LeaseRefused("inherited file lease refused: " + c.detail);
    return lease;
  }

  json status() override {
    json out = json::array();
    DIR *d = ::opendir(dir_.c_str());
    if (!d)
      return out;
    std::vector<std::string> names;
    while (struct dirent *e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".lock") == 0)
        names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto &n : names) {
      std::string path = dir_ + "/" + n;
      bool held = lock_is_held(path);
      json e = {{"lock_path", path}, {"held", held}};
      try {
        LockState st = read_state(path, -1);
        json rec = st.latest ? st.latest->rec : json::object();
        e["resource"] = rec.value("resource", json());
        e["token"] = std::to_string(st.generation);
        e["holder"] = held ? rec.value("holder", json()) : json();
        e["last_holder"] = held ? json() : rec.value("holder", json());
      } catch (const LeaseRefused &err) {
        e["resource"] = nullptr;
        e["token"] = nullptr;
        e["holder"] = nullptr;
        e["last_holder"] = nullptr;
        e["error"] = err.what();
      }
      out.push_back(e);
    }
    return out;
  }

private:
  Policy policy_;
  std::string dir_;
};

} // namespace
} // namespace convbench::lease

CONVBENCH_LEASE_BACKEND(file, false, [](const convbench::lease::Policy &p) {
  return std::unique_ptr<convbench::lease::Backend>(new convbench::lease::FileBackend(p));
})
