// The embedded default authority for one host: flock on ONE canonical system path per machine and
// resource. The generation counter in the file, bumped under the lock, is the fencing token; the
// holder record beside it lets a refusal name the holder. Verify compares the held descriptor's
// inode with the path's, so a lock file replaced under us (a second mutex) is caught.
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

json read_record_fd(int fd) {
  std::string buf;
  char chunk[4096];
  off_t off = 0;
  for (;;) {
    ssize_t n = ::pread(fd, chunk, sizeof chunk, off);
    if (n <= 0)
      break;
    buf.append(chunk, n);
    off += n;
  }
  if (buf.empty())
    return json::object();
  try {
    return json::parse(buf);
  } catch (...) {
    return json{{"unreadable", buf.substr(0, 200)}};
  }
}

json read_record_path(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return json::object();
  json j = read_record_fd(fd);
  ::close(fd);
  return j;
}

bool write_record(int fd, const json &rec) {
  std::string s = rec.dump() + "\n";
  if (::pwrite(fd, s.data(), s.size(), 0) != static_cast<ssize_t>(s.size()))
    return false;
  if (::ftruncate(fd, static_cast<off_t>(s.size())) != 0)
    return false;
  ::fsync(fd);
  return true;
}

long long generation_of(const json &rec) {
  auto it = rec.find("generation");
  return it != rec.end() && it->is_number_integer() ? it->get<long long>() : 0;
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
  return Holder::from_json(*h).describe() + " (token " + std::to_string(generation_of(rec)) + ")";
}

// True when some open file description holds a flock on path (probe with a fresh descriptor).
bool lock_is_held(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd); // closing drops the probe's lock if it got one
  return held;
}

class FileLease final : public Lease {
public:
  // Owned: fd holds the flock. Adopted: fd = -1, owner_pid is the process that holds it.
  FileLease(int fd, std::string path, dev_t dev, ino_t ino, long long gen, Resource r, Holder h,
            double ttl, bool adopted)
      : fd_(fd), path_(std::move(path)), dev_(dev), ino_(ino), gen_(gen), res_(std::move(r)),
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
      json rec = read_record_fd(fd_);
      rec["holder"] = nullptr;
      rec["released_utc"] = utc_now();
      write_record(fd_, rec);
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
                {"dev", static_cast<unsigned long long>(dev_)},
                {"inode", static_cast<unsigned long long>(ino_)}}
        .dump();
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
    if (::stat(path_.c_str(), &now) != 0)
      return "lock file " + path_ + " is gone (" + errno_text() + ")";
    if (now.st_dev != dev_ || now.st_ino != ino_)
      return "lock file " + path_ + " was replaced (held inode " + std::to_string(ino_) +
             ", path now inode " + std::to_string(now.st_ino) +
             "): another process can lock the new file, a second mutex";
    json rec = fd_ >= 0 ? read_record_fd(fd_) : read_record_path(path_);
    if (generation_of(rec) != gen_)
      return "token changed: lock generation is " + std::to_string(generation_of(rec)) +
             ", ours is " + std::to_string(gen_) + " (now held by " + describe_record(rec) + ")";
    Holder h = Holder::from_json(rec.value("holder", json()));
    if (h.pid != holder_.pid || h.run_id != holder_.run_id)
      return "lock record names " + describe_record(rec) + ", not the holder pid " +
             std::to_string(holder_.pid);
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
  std::string path_;
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

  std::string path_for(const Resource &r) const {
    return dir_ + "/" + safe_name(r.machine_id) + "-" + safe_name(r.name()) + ".lock";
  }

  std::unique_ptr<Lease> acquire(const AcquireRequest &req) override {
    ensure_dir(dir_);
    const std::string path = path_for(req.resource);
    const double ttl = req.ttl_s > 0 ? req.ttl_s : policy_.ttl_s;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(req.wait_s));
    auto backoff = std::chrono::milliseconds(20);
    for (;;) {
      int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
      if (fd < 0)
        throw LeaseRefused("cannot open lock file " + path + ": " + errno_text());
      ::fchmod(fd, 0666); // other users must be able to lock it too; fails harmlessly if not ours
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        struct stat held {
        }, now{};
        // The file may have been unlinked or replaced between our open and our flock: then we
        // hold a lock nobody else will look at. Start over on the current file.
        if (::fstat(fd, &held) != 0 || held.st_nlink == 0 || ::stat(path.c_str(), &now) != 0 ||
            now.st_ino != held.st_ino || now.st_dev != held.st_dev) {
          ::close(fd);
          continue;
        }
        json rec = read_record_fd(fd);
        long long gen = generation_of(rec) + 1;
        Holder h = req.holder;
        h.acquired_utc = utc_now();
        json out = {{"generation", gen},
                    {"resource", req.resource.to_json()},
                    {"holder", h.to_json()},
                    {"ttl_s", ttl}};
        if (!write_record(fd, out)) {
          std::string why = errno_text();
          ::close(fd);
          throw LeaseRefused("cannot write the lock record " + path + ": " + why);
        }
        return std::make_unique<FileLease>(fd, path, held.st_dev, held.st_ino, gen, req.resource, h,
                                           ttl, false);
      }
      int err = errno;
      if (err != EWOULDBLOCK) {
        ::close(fd);
        throw LeaseRefused("flock " + path + " failed: " + std::strerror(err));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        // The winner writes its record just after taking the lock: read in between, the file
        // holds no record yet or the previous holder's (seen on CI: "an unknown holder"). A held
        // lock always gets a live holder's record within moments, so wait briefly for it.
        json rec = read_record_fd(fd);
        for (int i = 0; i < 50 && !names_live_holder(rec); ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          rec = read_record_fd(fd);
        }
        ::close(fd);
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
    // The authority is this process's own policy, never the environment: the path must be the
    // canonical one for the resource.
    if (path != path_for(r))
      throw LeaseRefused("inherited file lease names lock " + path +
                         ", but the canonical lock for " + r.name() + " here is " + path_for(r));
    long long gen = 0;
    try {
      gen = std::stoll(j.value("token", ""));
    } catch (...) {
      throw LeaseRefused("inherited file lease has no numeric token");
    }
    auto lease = std::make_unique<FileLease>(-1, path, static_cast<dev_t>(j.value("dev", 0ULL)),
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
      json rec = read_record_path(path);
      bool held = lock_is_held(path);
      out.push_back({{"lock_path", path},
                     {"held", held},
                     {"resource", rec.value("resource", json())},
                     {"token", std::to_string(generation_of(rec))},
                     {"holder", held ? rec.value("holder", json()) : json()},
                     {"last_holder", held ? json() : rec.value("holder", json())}});
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
