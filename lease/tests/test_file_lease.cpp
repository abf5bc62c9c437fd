// File backend, RunLease and convlease on one host: real processes contending for a real flock.
// Each check was seen to fail with a planted fault; the plant is named beside the check.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <limits>

#include <gtest/gtest.h>

#include "convbench/lease/keeper.hpp"
#include "convbench/lease/lease.hpp"
#include "convbench/lease/nvml_gpu.hpp"
#include "convbench/lease/run_lease.hpp"
#include "proc_util.hpp"

using namespace convbench::lease;
using namespace lease_test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

class FileLeaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    tmp_ = make_tmpdir("file");
    locks_ = tmp_ + "/locks";
    ::setenv("CONVBENCH_LEASE_DIR", locks_.c_str(), 1);
    ::setenv("CONVBENCH_LEASE_POLICY", "none", 1);
    for (const char *v : {"CONVBENCH_LEASE", "CONVBENCH_LEASE_BACKEND", "CONVBENCH_LEASE_ENDPOINT",
                          "CONVBENCH_LEASE_PREFIX", "CONVBENCH_LEASE_TTL", "CONVBENCH_GPU_UUID"})
      ::unsetenv(v);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  Proc probe(const std::string &tag, std::vector<std::string> args,
             const std::map<std::string, std::string> &env = {}) {
    args.insert(args.begin(), LEASE_PROBE);
    return spawn(args, tmp_ + "/" + tag, env);
  }
  std::string lock_path(const std::string &res = "cpu") {
    return locks_ + "/" + Resource::this_host("").machine_id + "-" + res + ".lock";
  }
  // Where a user's grants of the resource are recorded (generation + holder).
  std::string holder_path(uid_t uid = ::geteuid(), const std::string &res = "cpu") {
    return locks_ + "/" + Resource::this_host("").machine_id + "-" + res + "." +
           std::to_string(uid) + ".holder";
  }

  std::string tmp_, locks_;
};

TEST_F(FileLeaseTest, TwoProcessesContendExactlyOneHolds) {
  // Planted: flock(LOCK_EX|LOCK_NB) result ignored in acquire -> both held (the second then saw
  // its token change: exit 4, not 3): failed here.
  std::string log = tmp_ + "/holds.log";
  Proc a = probe("a", {"--seconds", "1.5", "--log", log});
  Proc b = probe("b", {"--seconds", "1.5", "--log", log});
  int ra = wait_exit(a), rb = wait_exit(b);
  ASSERT_EQ(std::min(ra, rb), 0) << slurp(a.err) << slurp(b.err);
  ASSERT_EQ(std::max(ra, rb), 3) << slurp(a.err) << slurp(b.err);
  const Proc &winner = ra == 0 ? a : b;
  const Proc &loser = ra == 0 ? b : a;
  std::string why = slurp(loser.err);
  EXPECT_NE(why.find("is busy"), std::string::npos) << why;
  EXPECT_NE(why.find("pid " + std::to_string(winner.pid)), std::string::npos)
      << "the refusal must name the holder: " << why;
  EXPECT_EQ(read_holds(log).size(), 1u);
}

TEST_F(FileLeaseTest, WaitingContendersNeverOverlap) {
  // Planted: flock(fd, LOCK_UN) right after acquiring (a lock taken and dropped) -> overlapping
  // holds in the log: failed here.
  std::string log = tmp_ + "/holds.log";
  std::vector<Proc> ps;
  for (int i = 0; i < 4; ++i)
    ps.push_back(
        probe("w" + std::to_string(i), {"--seconds", "0.3", "--wait", "60", "--log", log}));
  for (auto &p : ps)
    EXPECT_EQ(wait_exit(p), 0) << slurp(p.err);
  auto holds = read_holds(log);
  ASSERT_EQ(holds.size(), 4u) << slurp(log);
  EXPECT_EQ(overlap_problem(holds), "") << slurp(log);
}

TEST_F(FileLeaseTest, KilledHolderFreesTheLockAndTheTokenGrows) {
  std::string log = tmp_ + "/holds.log";
  Proc holder = probe("holder", {"--seconds", "60", "--log", log});
  ASSERT_TRUE(wait_until([&] { return slurp(log).find("acquire") != std::string::npos; }, 20))
      << slurp(holder.err);
  Proc busy = probe("busy", {"--seconds", "0.1"});
  EXPECT_EQ(wait_exit(busy), 3) << "a live holder must exclude: " << slurp(busy.err);
  ::kill(holder.pid, SIGKILL);
  EXPECT_EQ(wait_exit(holder), 128 + SIGKILL);
  std::string json_out = tmp_ + "/after.json";
  Proc after = probe("after", {"--seconds", "0.1", "--json", json_out});
  ASSERT_EQ(wait_exit(after), 0) << "the kernel drops a dead holder's flock: " << slurp(after.err);
  json j = json::parse(slurp(json_out));
  std::string first = slurp(log).substr(slurp(log).find('"') + 1);
  first = first.substr(0, first.find('"'));
  // Planted: generation not bumped (gen = old) -> same token twice: failed here.
  EXPECT_EQ(std::stoll(j["token"].get<std::string>()), std::stoll(first) + 1);
  EXPECT_EQ(j["verdict"], "valid") << j.dump(2);
}

TEST_F(FileLeaseTest, ReplacedLockFileIsDetectedAtVerify) {
  RunLeaseOptions opt;
  opt.run_id = "replaced";
  auto lease = RunLease::open(opt);
  lease->verify_start();
  std::string path = lease->to_json()["fencing"]["lock_path"];
  ASSERT_EQ(path, lock_path());
  // Someone "cleans up" the lock file: the path now names a new inode that nobody holds.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0666);
  ASSERT_GE(fd, 0);
  ::close(fd);
  // The two-mutex failure made concrete: a second process takes the new file while we "hold".
  Proc second = probe("second", {"--seconds", "0.1"});
  EXPECT_EQ(wait_exit(second), 0) << slurp(second.err);
  lease->verify_end();
  json j = lease->to_json();
  // Planted: the nlink and dev+inode comparisons removed from verify -> valid: failed here.
  EXPECT_EQ(lease->verdict(), "void") << j.dump(2);
  EXPECT_FALSE(j["end_check"]["ok"].get<bool>());
  EXPECT_TRUE(j["start_check"]["ok"].get<bool>());
  std::string detail = j["end_check"]["detail"];
  EXPECT_NE(detail.find("unlinked"), std::string::npos) << detail;
}

TEST_F(FileLeaseTest, HomeDirectoryIsRefused) {
  const char *home = std::getenv("HOME");
  ASSERT_TRUE(home && *home) << "HOME must be set for this test";
  for (std::string dir : {std::string(home) + "/.convbench-locks",
                          std::string("/home/someone/locks"), std::string("/root/gpu-locks")}) {
    ::setenv("CONVBENCH_LEASE_DIR", dir.c_str(), 1);
    RunLeaseOptions opt;
    try {
      RunLease::open(opt);
      // Planted: refuse_home() not called -> the lease was taken under $HOME: failed here.
      ADD_FAILURE() << "a lock under " << dir << " was accepted";
    } catch (const LeaseRefused &e) {
      std::string m = e.what();
      EXPECT_NE(m.find("home directory"), std::string::npos) << m;
      EXPECT_NE(m.find("two-mutex"), std::string::npos) << m;
    }
    EXPECT_FALSE(fs::exists(dir)) << "nothing may be created under a home directory";
  }
}

TEST_F(FileLeaseTest, FileBackendRefusesWhenPolicyNamesEtcd) {
  std::string policy = tmp_ + "/lease.json";
  std::ofstream(policy) << R"({"backend": "etcd", "endpoint": "http://127.0.0.1:9", "ttl_s": 3})";
  ::setenv("CONVBENCH_LEASE_POLICY", policy.c_str(), 1);
  ::setenv("CONVBENCH_LEASE_BACKEND", "file", 1); // a user trying to step around the site
  RunLeaseOptions opt;
  try {
    RunLease::open(opt);
    // Planted: the fleet check in FileBackend's constructor removed -> lease taken: failed here.
    ADD_FAILURE() << "the file backend acted although the site policy names etcd";
  } catch (const LeaseRefused &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'etcd'"), std::string::npos) << m;
    EXPECT_NE(m.find("file backend refuses"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(lock_path()));
  // The same through the CLI: one clear line, exit 3.
  Proc c = spawn({CONVLEASE, "run", "--", "true"}, tmp_ + "/cli");
  EXPECT_EQ(wait_exit(c), 3);
  EXPECT_NE(slurp(c.err).find("file backend refuses"), std::string::npos) << slurp(c.err);
}

TEST_F(FileLeaseTest, MalformedPolicyIsRefusedClearly) {
  std::string policy = tmp_ + "/lease.json";
  std::ofstream(policy) << "{not json";
  ::setenv("CONVBENCH_LEASE_POLICY", policy.c_str(), 1);
  EXPECT_THROW(Policy::load(), LeaseRefused);
  ::setenv("CONVBENCH_LEASE_POLICY", (tmp_ + "/absent.json").c_str(), 1);
  EXPECT_THROW(Policy::load(), LeaseRefused);
  ::setenv("CONVBENCH_LEASE_POLICY", "none", 1);
  ::setenv("CONVBENCH_LEASE_TTL", "soon", 1);
  EXPECT_THROW(Policy::load(), LeaseRefused);
}

TEST_F(FileLeaseTest, ConvleaseRunHandsAVerifiableLeaseToTheCommand) {
  std::string out = tmp_ + "/child.json";
  Proc c = spawn({CONVLEASE, "run", "--", LEASE_PROBE, "--seconds", "0.3", "--json", out},
                 tmp_ + "/run");
  ASSERT_EQ(wait_exit(c), 0) << slurp(c.err);
  json j = json::parse(slurp(out));
  EXPECT_EQ(j["verdict"], "valid") << j.dump(2);
  EXPECT_TRUE(j["adopted"].get<bool>());
  EXPECT_EQ(j["backend"], "file");
  EXPECT_EQ(j["holder"]["pid"].get<long>(), c.pid) << "the holder is convlease, the child adopts";
  EXPECT_EQ(j["resource"]["name"], "cpu");
  EXPECT_TRUE(j["start_check"]["ok"].get<bool>());
  EXPECT_TRUE(j["end_check"]["ok"].get<bool>());
  // Released afterwards: the next run acquires at once.
  Proc next = probe("next", {"--seconds", "0.1"});
  EXPECT_EQ(wait_exit(next), 0) << slurp(next.err);
}

TEST_F(FileLeaseTest, ConvleasePassesTheChildStatusAndExits3WhenTheLeaseIsLost) {
  Proc seven = spawn({CONVLEASE, "run", "--", "sh", "-c", "exit 7"}, tmp_ + "/seven");
  EXPECT_EQ(wait_exit(seven), 7) << slurp(seven.err);
  // The command replaces the lock file under convlease: convlease's final verify must fail.
  std::string sh = "rm -f '" + lock_path() + "' && : > '" + lock_path() + "'";
  Proc lost = spawn({CONVLEASE, "run", "--", "sh", "-c", sh}, tmp_ + "/lost");
  // Planted: convlease returning the child's status although the lease was lost -> 0: failed.
  EXPECT_EQ(wait_exit(lost), 3) << slurp(lost.err);
  EXPECT_NE(slurp(lost.err).find("final verify failed"), std::string::npos) << slurp(lost.err);
  Proc usage = spawn({CONVLEASE, "run", "--ttl", "x", "--", "true"}, tmp_ + "/usage");
  EXPECT_EQ(wait_exit(usage), 2);
  EXPECT_NE(slurp(usage.err).find("--ttl"), std::string::npos) << slurp(usage.err);
}

TEST_F(FileLeaseTest, ConvleaseStatusNamesTheHolder) {
  Proc hold =
      spawn({CONVLEASE, "run", "--run-id", "statusrun", "--", "sleep", "30"}, tmp_ + "/hold");
  ASSERT_TRUE(wait_until([&] { return slurp(hold.err).find("holding") != std::string::npos; }, 20));
  Proc st = spawn({CONVLEASE, "status"}, tmp_ + "/status");
  EXPECT_EQ(wait_exit(st), 0);
  std::string text = slurp(st.out);
  EXPECT_NE(text.find("HELD by"), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + std::to_string(hold.pid)), std::string::npos) << text;
  EXPECT_NE(text.find("run statusrun"), std::string::npos) << text;
  ::kill(hold.pid, SIGKILL);
  wait_exit(hold);
  Proc st2 = spawn({CONVLEASE, "status", "--json"}, tmp_ + "/status2");
  EXPECT_EQ(wait_exit(st2), 0);
  json j = json::parse(slurp(st2.out));
  ASSERT_EQ(j["leases"].size(), 1u) << j.dump(2);
  EXPECT_FALSE(j["leases"][0]["held"].get<bool>()) << "a dead holder holds nothing";
}

// `convlease verify`: the check a command under `convlease run` that is not bench_conv
// (a user's own script) runs at its start and end; it adopts as bench_conv does.
TEST_F(FileLeaseTest, ConvleaseVerifyChecksTheInheritedLease) {
  Proc ok = spawn({CONVLEASE, "run", "--", CONVLEASE, "verify", "--json"}, tmp_ + "/ok");
  ASSERT_EQ(wait_exit(ok), 0) << slurp(ok.err);
  json j = json::parse(slurp(ok.out));
  EXPECT_EQ(j["check"]["ok"], true) << j.dump(2);
  EXPECT_EQ(j["holder"]["pid"], ok.pid) << "the holder is convlease run";
  EXPECT_EQ(j["backend"], "file");
  EXPECT_EQ(j["adopted"], true);
  EXPECT_EQ(j["resource"]["name"], "cpu");
  EXPECT_EQ(j["token"], j["fencing"]["generation"].dump()) << j.dump(2);

  // The command rewrites the holder's generation in place (another grant's token), then
  // verifies. Planted: cmd_verify printing the inherited lease as ok without adopting it -> exit
  // 0: failed.
  std::string sh = "printf '{\"generation\":999}' > '" + holder_path() + "' && exec " +
                   std::string(CONVLEASE) + " verify --json";
  Proc changed = spawn({CONVLEASE, "run", "--", "sh", "-c", sh}, tmp_ + "/changed");
  EXPECT_EQ(wait_exit(changed), 3) << slurp(changed.err);
  json c = json::parse(slurp(changed.out));
  EXPECT_EQ(c["check"]["ok"], false) << c.dump(2);
  EXPECT_NE(c["check"].value("detail", "").find("token changed"), std::string::npos) << c.dump(2);

  // Planted: adopt_inherited without its resource comparison -> verified: failed here.
  Proc gpu = spawn({CONVLEASE, "run", "--", CONVLEASE, "verify", "--gpu-uuid", "GPU-00000000-dead"},
                   tmp_ + "/gpu");
  EXPECT_EQ(wait_exit(gpu), 3) << slurp(gpu.err);
  EXPECT_NE(slurp(gpu.err).find("inherited lease covers cpu"), std::string::npos) << slurp(gpu.err);

  Proc none = spawn({CONVLEASE, "verify", "--json"}, tmp_ + "/none");
  EXPECT_EQ(wait_exit(none), 3);
  EXPECT_EQ(json::parse(slurp(none.out))["check"]["ok"], false);
  EXPECT_NE(slurp(none.err).find("no inherited lease"), std::string::npos) << slurp(none.err);
  Proc usage = spawn({CONVLEASE, "verify", "--gpu"}, tmp_ + "/usage");
  EXPECT_EQ(wait_exit(usage), 2) << slurp(usage.err);
}

// An inherited lease is only as good as the authority's word on it.
TEST_F(FileLeaseTest, ForgedOrStaleInheritedTokenIsRefused) {
  auto backend = make_backend("file", Policy::load());
  AcquireRequest req{Resource::this_host(""), Holder::this_process("parent"), 0, 0};
  auto lease = backend->acquire(req);
  json env = json::parse(lease->export_env());
  auto adopt = [&](const json &e, const std::string &tag, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--seconds", "0.1"};
    args.insert(args.end(), extra.begin(), extra.end());
    Proc p =
        probe(tag, args, {{"CONVBENCH_LEASE", e.is_string() ? e.get<std::string>() : e.dump()}});
    int rc = wait_exit(p);
    return std::make_pair(rc, slurp(p.err));
  };
  // Control: the genuine lease, inherited by our own child, is adopted and valid.
  EXPECT_EQ(adopt(env, "genuine").first, 0);
  json forged = env;
  forged["token"] = std::to_string(std::stoll(env["token"].get<std::string>()) + 1);
  auto [rc1, err1] = adopt(forged, "forged");
  // Planted: adopt() without verify() -> adopted, then void at the start check (exit 4): failed.
  EXPECT_EQ(rc1, 3) << err1;
  EXPECT_NE(err1.find("token changed"), std::string::npos) << err1;
  json elsewhere = env;
  elsewhere["lock_path"] = tmp_ + "/my-own.lock";
  auto [rc2, err2] = adopt(elsewhere, "elsewhere");
  EXPECT_EQ(rc2, 3) << err2;
  EXPECT_NE(err2.find("canonical lock"), std::string::npos) << err2;
  auto [rc3, err3] = adopt(json("not json at all"), "garbage");
  EXPECT_EQ(rc3, 3) << err3;
  auto [rc4, err4] = adopt(env, "wrong-gpu", {"--gpu-uuid", "GPU-00000000-dead"});
  EXPECT_EQ(rc4, 3) << err4;
  EXPECT_NE(err4.find("inherited lease covers cpu"), std::string::npos) << err4;
  lease->release();
  auto [rc5, err5] = adopt(env, "stale");
  EXPECT_EQ(rc5, 3) << "a released lease is stale: " << err5;

  // A lease held by a process that is not our ancestor: its record is readable by anyone, so a
  // forger can copy generation and holder; the adopter must still refuse.
  Proc other = spawn({CONVLEASE, "run", "--", "sleep", "30"}, tmp_ + "/other");
  ASSERT_TRUE(
      wait_until([&] { return slurp(other.err).find("holding") != std::string::npos; }, 20));
  json rec = json::parse(slurp(holder_path()));
  json copied = env;
  copied["token"] = std::to_string(rec["generation"].get<long long>());
  copied["holder"] = rec["holder"];
  struct stat st {};
  ::stat(lock_path().c_str(), &st);
  copied["dev"] = static_cast<unsigned long long>(st.st_dev);
  copied["inode"] = static_cast<unsigned long long>(st.st_ino);
  auto [rc6, err6] = adopt(copied, "copied");
  // Planted: the is_ancestor() check removed -> the copied lease was adopted: failed here.
  EXPECT_EQ(rc6, 3) << err6;
  EXPECT_NE(err6.find("not an ancestor"), std::string::npos) << err6;
  ::kill(other.pid, SIGKILL);
  wait_exit(other);
}

TEST_F(FileLeaseTest, ForeignGpuProcessDuringASampleVoidsTheRun) {
  RunLeaseOptions opt;
  opt.gpu_uuid = "GPU-11111111-2222-3333-4444-555555555555";
  opt.run_id = "observed";
  auto lease = RunLease::open(opt);
  lease->verify_start();
  lease->observe_sample("up1/96/cuda-f32/resident", 0, 0, 0.02);
  lease->observe_sample("up1/96/cuda-f64/resident", 1, -1, 0.40); // unknown: recorded, not void
  EXPECT_EQ(lease->to_json()["observation"]["foreign_gpu_unknown_samples"], 1);
  lease->observe_sample("up1/96/cuda-f32/resident", 2, 2, 0.01);
  lease->verify_end();
  json j = lease->to_json();
  // Planted: observe_sample ignored foreign_gpu -> verdict valid: failed here.
  EXPECT_EQ(lease->verdict(), "void") << j.dump(2);
  EXPECT_EQ(j["observation"]["foreign_gpu_processes_max"], 2);
  EXPECT_EQ(j["observation"]["foreign_gpu_samples"], json::array({"up1/96/cuda-f32/resident"}));
  EXPECT_DOUBLE_EQ(j["observation"]["foreign_cpu_share_max"].get<double>(), 0.40);
  ASSERT_EQ(j["reasons"].size(), 1u) << j.dump(2);
  std::string r = j["reasons"][0];
  EXPECT_NE(r.find("up1/96/cuda-f32/resident round 2"), std::string::npos) << r;
  EXPECT_NE(r.find("2 other process(es)"), std::string::npos) << r;
  EXPECT_TRUE(j["start_check"]["ok"].get<bool>() && j["end_check"]["ok"].get<bool>());
}

TEST_F(FileLeaseTest, ForeignCpuAloneDoesNotVoidButIsRecorded) {
  RunLeaseOptions opt;
  auto lease = RunLease::open(opt);
  lease->verify_start();
  lease->observe_sample("up3/4/cpu-f32/host", 0, 0, 0.75);
  lease->verify_end();
  json j = lease->to_json();
  EXPECT_EQ(j["verdict"], "valid") << j.dump(2);
  EXPECT_DOUBLE_EQ(j["observation"]["foreign_cpu_share_max"].get<double>(), 0.75);
  for (const char *key :
       {"backend", "resource", "holder", "token", "ttl_s", "acquired_utc", "verify_utc",
        "max_renew_gap_s", "start_check", "end_check", "observation", "verdict", "reasons"})
    EXPECT_TRUE(j.contains(key)) << "lease block lacks " << key;
  EXPECT_EQ(j["verify_utc"].size(), 2u);
  EXPECT_EQ(j["status"], "collected");
}

TEST_F(FileLeaseTest, MissingChecksVoidAndNoLeaseIsOutsideLease) {
  RunLeaseOptions opt;
  auto lease = RunLease::open(opt);
  lease->observe_sample("up3/4/cpu-f32/host", 0, 0, 0.0);
  // Planted: all_reasons() without the missing-check reasons -> valid: failed here.
  EXPECT_EQ(lease->verdict(), "void") << "no start/end check: nothing was verified";
  lease->release();
  RunLeaseOptions none;
  none.no_lease = true;
  fs::remove_all(locks_);
  auto outside = RunLease::open(none);
  outside->verify_start();
  outside->verify_end();
  EXPECT_EQ(outside->verdict(), "outside-lease");
  EXPECT_EQ(outside->to_json()["verdict"], "outside-lease");
  EXPECT_FALSE(fs::exists(locks_)) << "--no-lease must not take a lock";
}

TEST_F(FileLeaseTest, LockDirectoryIsCreatedSharedOrRefusedClearly) {
  std::string dir = tmp_ + "/a/b/locks";
  ::setenv("CONVBENCH_LEASE_DIR", dir.c_str(), 1);
  { auto l = RunLease::open(RunLeaseOptions{}); }
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u) << "every user must be able to lock here";
  std::ofstream(tmp_ + "/plainfile") << "x";
  std::string bad = tmp_ + "/plainfile/locks";
  ::setenv("CONVBENCH_LEASE_DIR", bad.c_str(), 1);
  try {
    RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "a lock dir under a regular file was accepted";
  } catch (const LeaseRefused &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cannot create the lock directory " + bad), std::string::npos) << m;
    EXPECT_NE(m.find("install -d -m 1777"), std::string::npos) << m;
  }
}

// ---- other local users: they can neither void a hold nor squat the lock unnamed ----

constexpr uid_t kOtherUid = 12345; // a user that is neither root nor the test

// Runs `f` in a child as kOtherUid; returns f's result (the child's exit status), -1 on failure.
template <class F> int as_other_user(F f) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setresgid(kOtherUid, kOtherUid, kOtherUid) != 0 ||
        ::setresuid(kOtherUid, kOtherUid, kOtherUid) != 0)
      ::_exit(100);
    ::_exit(f());
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define REQUIRE_ROOT()                                                                             \
  if (::geteuid() != 0)                                                                            \
  GTEST_SKIP() << "SKIPPED: needs root to act as a second local user (setresuid, chown)"

TEST_F(FileLeaseTest, AnotherUserCanNeitherWriteTheLockNorVoidTheHold) {
  // Fails on a lock file made 0666 with the token in it (any user rewrote the generation and
  // every holder's verify failed: "token changed").
  REQUIRE_ROOT();
  ASSERT_EQ(::chmod(tmp_.c_str(), 0755), 0);
  auto lease = RunLease::open(RunLeaseOptions{});
  lease->verify_start();
  struct stat st {};
  ASSERT_EQ(::stat(lock_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u) << "lock file mode " << std::oct << (st.st_mode & 0777);
  const long long gen = std::stoll(lease->to_json()["token"].get<std::string>());
  const std::string lock = lock_path(), theirs = holder_path(kOtherUid), mine = holder_path();
  const int rc = as_other_user([&] {
    if (::open(lock.c_str(), O_WRONLY | O_CLOEXEC) >= 0)
      return 1; // could write the mutex
    if (::open(mine.c_str(), O_WRONLY | O_CLOEXEC) >= 0)
      return 2; // could write the holder's record
    if (::unlink(mine.c_str()) == 0 || ::unlink(lock.c_str()) == 0)
      return 3; // could remove them (the directory is sticky)
    // Their own file, claiming a later grant: recorded, but it cannot void our hold.
    std::ofstream(theirs) << json{{"generation", gen + 5},
                                  {"holder", {{"pid", 1}, {"user", "x"}, {"run_id", "forged"}}}}
                                 .dump();
    return 0;
  });
  EXPECT_EQ(rc, 0) << "1: lock writable, 2: holder file writable, 3: removable";
  lease->verify_end();
  EXPECT_EQ(lease->verdict(), "valid") << lease->to_json().dump(2);
  lease->release();
  // Tokens only grow: the next grant is above every user's record.
  auto next = RunLease::open(RunLeaseOptions{});
  EXPECT_EQ(std::stoll(next->to_json()["token"].get<std::string>()), gen + 6);
}

TEST_F(FileLeaseTest, ALockFileOfAnotherUserIsRefusedNamingTheOwner) {
  // Planted by another user before anyone locked: its owner could unlink it under a holder or
  // chmod it 000. Fails on a backend that opens whatever is at the path.
  REQUIRE_ROOT();
  { auto first = RunLease::open(RunLeaseOptions{}); } // the directory, as a first run makes it
  ASSERT_EQ(::unlink(lock_path().c_str()), 0);
  int fd = ::open(lock_path().c_str(), O_CREAT | O_WRONLY, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::fchown(fd, kOtherUid, kOtherUid), 0);
  ::close(fd);
  try {
    RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "a lock file owned by another user was used";
  } catch (const LeaseRefused &e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("owned by"), std::string::npos) << m;
    EXPECT_NE(m.find("uid " + std::to_string(kOtherUid)), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
  // A lock directory another user owns (they can remove any file in it) is refused the same way.
  const std::string theirs = tmp_ + "/theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 01777), 0);
  ASSERT_EQ(::chown(theirs.c_str(), kOtherUid, kOtherUid), 0);
  ::setenv("CONVBENCH_LEASE_DIR", theirs.c_str(), 1);
  try {
    RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "a lock directory owned by another user was used";
  } catch (const LeaseRefused &e) {
    EXPECT_NE(std::string(e.what()).find("uid " + std::to_string(kOtherUid)), std::string::npos)
        << e.what();
  }
  // World-writable without the sticky bit: anyone could replace a lock file.
  const std::string open_dir = tmp_ + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  ::setenv("CONVBENCH_LEASE_DIR", open_dir.c_str(), 1);
  try {
    RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "a world-writable lock directory without the sticky bit was used";
  } catch (const LeaseRefused &e) {
    EXPECT_NE(std::string(e.what()).find("sticky"), std::string::npos) << e.what();
  }
}

TEST_F(FileLeaseTest, CorruptStateIsRefusedNeverReadAsTokenZero) {
  // Fails on a reader that takes an unreadable record as generation 0 (the next token was 1,
  // a token already granted).
  long long gen = 0;
  {
    auto l = RunLease::open(RunLeaseOptions{});
    gen = std::stoll(l->to_json()["token"].get<std::string>());
  }
  { auto l = RunLease::open(RunLeaseOptions{}); }
  ASSERT_GE(gen, 1);
  std::ofstream(holder_path(), std::ios::trunc) << "{\"generation\": 4"; // torn
  try {
    RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "a corrupt holder file was read";
  } catch (const LeaseRefused &e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("corrupt"), std::string::npos) << m;
    EXPECT_NE(m.find(holder_path()), std::string::npos) << m;
  }
  // A lock file from an older version holding its record: a floor the tokens grow from.
  fs::remove(holder_path());
  std::ofstream(lock_path(), std::ios::trunc) << R"({"generation": 41, "holder": null})";
  {
    auto l = RunLease::open(RunLeaseOptions{});
    EXPECT_EQ(l->to_json()["token"], "42");
  }
  std::ofstream(lock_path(), std::ios::trunc) << "garbage";
  EXPECT_THROW(RunLease::open(RunLeaseOptions{}), LeaseRefused);
}

TEST_F(FileLeaseTest, TokensSaturateInsteadOfWrapping) {
  // Fails on generation + 1 without a bound (INT64_MAX wrapped to a negative token).
  { auto l = RunLease::open(RunLeaseOptions{}); }
  std::ofstream(holder_path(), std::ios::trunc)
      << json{{"generation", std::numeric_limits<long long>::max()}, {"holder", nullptr}}.dump();
  try {
    auto l = RunLease::open(RunLeaseOptions{});
    ADD_FAILURE() << "granted token " << l->to_json()["token"];
  } catch (const LeaseRefused &e) {
    EXPECT_NE(std::string(e.what()).find("maximum"), std::string::npos) << e.what();
  }
}

TEST_F(FileLeaseTest, GpuIndexMapsToAUuidOrFailsClearly) {
  std::string why;
  std::string nvml_uuid = nvml_gpu_uuid(0, &why);
  Proc p = spawn({CONVLEASE, "run", "--gpu", "0", "--", "true"}, tmp_ + "/gpu0");
  int rc = wait_exit(p);
  if (nvml_uuid.empty()) {
    EXPECT_EQ(rc, 3) << slurp(p.err);
    EXPECT_NE(slurp(p.err).find("cannot map --gpu 0"), std::string::npos) << slurp(p.err);
    EXPECT_NE(slurp(p.err).find("CONVBENCH_GPU_UUID"), std::string::npos) << slurp(p.err);
  } else {
    EXPECT_EQ(rc, 0) << slurp(p.err);
    EXPECT_TRUE(fs::exists(lock_path(nvml_uuid)));
  }
  Proc q = spawn({CONVLEASE, "run", "--gpu", "0", "--", "true"}, tmp_ + "/gpu0env",
                 {{"CONVBENCH_GPU_UUID", "gpu-ABCDEF01-0000"}});
  EXPECT_EQ(wait_exit(q), 0) << slurp(q.err);
  // One spelling per GPU: the UUID names the lock file, so case variants must not make two locks.
  // Planted: the normalisation in Resource::this_host removed -> lock gpu-ABCDEF01-0000: failed.
  EXPECT_TRUE(fs::exists(lock_path(nvml_uuid.empty() ? "GPU-abcdef01-0000" : nvml_uuid)));
}

} // namespace

// The lock path's machine identity where /etc/machine-id is absent (the H200 VM image has
// neither machine-id file). Planted: returning the host name unprefixed fails the first check.
TEST(MachineIdentity, FallsBackToThePrefixedHostName) {
  using convbench::lease::Resource;
  EXPECT_EQ(Resource::machine_identity("", "", "vm"), "host-vm");
  EXPECT_EQ(Resource::machine_identity("", "", "a b/c"), "host-a_b_c"); // never a path separator
  EXPECT_EQ(Resource::machine_identity("0123abcd", "ffff", "vm"), "0123abcd");
  EXPECT_EQ(Resource::machine_identity("", "ffff", "vm"), "ffff");
  EXPECT_EQ(Resource::machine_identity("", "", ""), "");
}
