// etcd backend against a REAL etcd started on loopback by each test (temporary data dir, free
// ports). No etcd binary = FAIL with the reason: CI installs etcd-server, so a skip would hide a
// gap.
#include <curl/curl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include "convbench/lease/lease.hpp"
#include "convbench/lease/run_lease.hpp"
#include "proc_util.hpp"

using namespace convbench::lease;
using namespace lease_test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr *>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr *>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

size_t sink(char *, size_t s, size_t n, void *) { return s * n; }

bool healthy(const std::string &endpoint) {
  CURL *c = curl_easy_init();
  std::string url = endpoint + "/health";
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 500L);
  CURLcode rc = curl_easy_perform(c);
  long code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_easy_cleanup(c);
  return rc == CURLE_OK && code == 200;
}

std::string find_etcd() {
  if (const char *e = std::getenv("CONVBENCH_ETCD"); e && *e)
    return e;
  const char *path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (::access((d + "/etcd").c_str(), X_OK) == 0)
      return d + "/etcd";
  return "";
}

class EtcdLeaseTest : public ::testing::Test {
protected:
  void SetUp() override {
    tmp_ = make_tmpdir("etcd");
    start_etcd();
    ::setenv("CONVBENCH_LEASE_POLICY", "none", 1);
    ::setenv("CONVBENCH_LEASE_BACKEND", "etcd", 1);
    ::setenv("CONVBENCH_LEASE_ENDPOINT", endpoint_.c_str(), 1);
    ::setenv("CONVBENCH_LEASE_PREFIX", "/convbench-test", 1);
    ::setenv("CONVBENCH_LEASE_TTL", "2", 1);
    ::unsetenv("CONVBENCH_LEASE");
    ::unsetenv("CONVBENCH_LEASE_DIR");
  }
  void TearDown() override {
    stop_etcd();
    fs::remove_all(tmp_);
  }

  void start_etcd() {
    std::string etcd = find_etcd();
    if (etcd.empty())
      FAIL()
          << "etcd not found on PATH (nor CONVBENCH_ETCD): install etcd-server "
             "(apt-get install etcd-server; .ci/run does) - the etcd lease tests need a real etcd";
    for (int attempt = 0; attempt < 3 && etcd_.pid < 0; ++attempt) {
      int client = free_port(), peer = free_port();
      endpoint_ = "http://127.0.0.1:" + std::to_string(client);
      std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
      Proc p = spawn({etcd, "--data-dir", tmp_ + "/data" + std::to_string(attempt),
                      "--listen-client-urls", endpoint_, "--advertise-client-urls", endpoint_,
                      "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                      "--initial-cluster", "default=" + peer_url},
                     tmp_ + "/etcd" + std::to_string(attempt));
      if (wait_until([&] { return healthy(endpoint_); }, 30)) {
        etcd_ = p;
        break;
      }
      ::kill(p.pid, SIGKILL);
      wait_exit(p, 5);
    }
    ASSERT_GE(etcd_.pid, 0) << "etcd did not become healthy: " << slurp(tmp_ + "/etcd0.err");
  }
  void stop_etcd() {
    if (etcd_.pid < 0)
      return;
    ::kill(etcd_.pid, SIGKILL);
    wait_exit(etcd_, 10);
    etcd_.pid = -1;
  }

  Proc probe(const std::string &tag, std::vector<std::string> args,
             const std::map<std::string, std::string> &env = {}) {
    args.insert(args.begin(), LEASE_PROBE);
    return spawn(args, tmp_ + "/" + tag, env);
  }
  bool acquired(const std::string &log) { return slurp(log).find("acquire") != std::string::npos; }

  std::string tmp_, endpoint_;
  Proc etcd_;
};

TEST_F(EtcdLeaseTest, BusyResourceIsRefusedNamingTheHolder) {
  std::string log = tmp_ + "/holds.log";
  Proc holder = probe("holder", {"--seconds", "3", "--log", log});
  ASSERT_TRUE(wait_until([&] { return acquired(log); }, 20)) << slurp(holder.err);
  Proc busy = probe("busy", {"--seconds", "0.1"});
  int rc = wait_exit(busy);
  std::string err = slurp(busy.err);
  // Planted: the txn's compare removed (the put always succeeds) -> the contender took the key
  // instead of being refused: failed here.
  EXPECT_EQ(rc, 3) << err;
  EXPECT_NE(err.find("is held by"), std::string::npos) << err;
  EXPECT_NE(err.find("pid " + std::to_string(holder.pid)), std::string::npos) << err;
  EXPECT_EQ(wait_exit(holder), 0) << slurp(holder.err) << slurp(holder.out);
  // Released on exit (revoke): the key is gone.
  Proc st = spawn({CONVLEASE, "status", "--json"}, tmp_ + "/st");
  EXPECT_EQ(wait_exit(st), 0) << slurp(st.err);
  EXPECT_EQ(json::parse(slurp(st.out))["leases"].size(), 0u) << slurp(st.out);
}

TEST_F(EtcdLeaseTest, ContendersHoldOneAtATime) {
  std::string log = tmp_ + "/holds.log";
  std::vector<Proc> ps;
  for (int i = 0; i < 4; ++i)
    ps.push_back(
        probe("c" + std::to_string(i), {"--seconds", "0.3", "--wait", "60", "--log", log}));
  for (auto &p : ps)
    EXPECT_EQ(wait_exit(p, 90), 0) << slurp(p.err) << slurp(p.out);
  auto holds = read_holds(log);
  ASSERT_EQ(holds.size(), 4u) << slurp(log);
  // Planted: the txn's compare removed -> overlapping holds, 3 of 4 runs void: failed here.
  EXPECT_EQ(overlap_problem(holds), "") << slurp(log);
}

TEST_F(EtcdLeaseTest, HolderStoppedPastTheTtlIsVoid) {
  std::string log = tmp_ + "/holds.log", first = tmp_ + "/first.json",
              second = tmp_ + "/second.json";
  Proc holder = probe("holder", {"--seconds", "2", "--log", log, "--json", first});
  ASSERT_TRUE(wait_until([&] { return acquired(log); }, 20)) << slurp(holder.err);
  ::kill(holder.pid, SIGSTOP);
  // The contender waits; etcd expires the stopped holder's lease after the TTL and the
  // contender takes the resource while the holder still believes it holds it.
  Proc contender = probe("contender", {"--seconds", "0.5", "--wait", "30", "--json", second});
  int rc2 = wait_exit(contender, 60);
  ::kill(holder.pid, SIGCONT);
  int rc1 = wait_exit(holder, 60);
  ASSERT_EQ(rc2, 0) << slurp(contender.err);
  EXPECT_EQ(json::parse(slurp(second))["verdict"], "valid");
  json j = json::parse(slurp(first));
  // Planted: the Keeper's gap rule disabled -> no "renewal gap" reason: failed here (the end
  // check still fails on its own: the key was re-created by the contender).
  EXPECT_EQ(rc1, 4) << j.dump(2);
  EXPECT_EQ(j["verdict"], "void");
  EXPECT_GT(j["max_renew_gap_s"].get<double>(), 2.0) << j.dump(2);
  std::string reasons = j["reasons"].dump();
  EXPECT_NE(reasons.find("renewal gap"), std::string::npos) << reasons;
  EXPECT_NE(reasons.find("end check failed"), std::string::npos) << reasons;
  EXPECT_FALSE(j["end_check"]["ok"].get<bool>());
}

TEST_F(EtcdLeaseTest, EtcdKilledMidRunIsVoid) {
  std::string log = tmp_ + "/holds.log", out = tmp_ + "/run.json";
  Proc holder = probe("holder", {"--seconds", "2.5", "--log", log, "--json", out});
  ASSERT_TRUE(wait_until([&] { return acquired(log); }, 20)) << slurp(holder.err);
  stop_etcd();
  int rc = wait_exit(holder, 60);
  json j = json::parse(slurp(out));
  // Planted: renew() and verify() treating transport errors as ok -> valid: failed here.
  EXPECT_EQ(rc, 4) << j.dump(2);
  EXPECT_EQ(j["verdict"], "void");
  EXPECT_NE(j["reasons"].dump().find("unreachable"), std::string::npos) << j["reasons"].dump(2);
}

TEST_F(EtcdLeaseTest, ForgedOrStaleInheritedTokenIsRefused) {
  auto backend = make_backend("etcd", Policy::load());
  auto lease = backend->acquire({Resource::this_host(""), Holder::this_process("parent"), 0, 0});
  json env = json::parse(lease->export_env());
  auto adopt = [&](const json &e, const std::string &tag) {
    Proc p = probe(tag, {"--seconds", "0.1"}, {{"CONVBENCH_LEASE", e.dump()}});
    int rc = wait_exit(p);
    return std::make_pair(rc, slurp(p.err));
  };
  EXPECT_EQ(adopt(env, "genuine").first, 0) << "control: the genuine lease must be adopted";
  json forged = env;
  forged["token"] = std::to_string(std::stoll(env["token"].get<std::string>()) + 7);
  auto [rc1, err1] = adopt(forged, "forged-token");
  // Planted: adopt() without verify() -> exit 0: failed here.
  EXPECT_EQ(rc1, 3) << err1;
  EXPECT_NE(err1.find("token changed"), std::string::npos) << err1;
  json other_lease = env;
  other_lease["lease_id"] = "12345";
  EXPECT_EQ(adopt(other_lease, "forged-lease").first, 3);
  json fake_authority = env;
  fake_authority["endpoint"] = "http://127.0.0.1:9";
  auto [rc3, err3] = adopt(fake_authority, "fake-authority");
  EXPECT_EQ(rc3, 3) << err3;
  EXPECT_NE(err3.find("this site's authority"), std::string::npos) << err3;
  lease->release();
  auto [rc4, err4] = adopt(env, "stale");
  EXPECT_EQ(rc4, 3) << err4;
  EXPECT_NE(err4.find("is gone"), std::string::npos) << err4;

  // Someone else's live lease, copied from etcd (anyone can read the key): not our ancestor.
  Proc other = spawn({CONVLEASE, "run", "--", "sleep", "30"}, tmp_ + "/other");
  ASSERT_TRUE(wait_until([&] { return slurp(other.err).find("holding") != std::string::npos; }, 20))
      << slurp(other.err);
  Proc st = spawn({CONVLEASE, "status", "--json"}, tmp_ + "/st");
  ASSERT_EQ(wait_exit(st), 0) << slurp(st.err);
  json entry = json::parse(slurp(st.out))["leases"][0];
  json copied = env;
  copied["token"] = entry["token"];
  copied["lease_id"] = entry["lease_id"];
  copied["holder"] = entry["holder"];
  auto [rc5, err5] = adopt(copied, "copied");
  // Planted: the is_ancestor() check removed from EtcdLease::verify -> adopted: failed here.
  EXPECT_EQ(rc5, 3) << err5;
  EXPECT_NE(err5.find("not an ancestor"), std::string::npos) << err5;
  ::kill(other.pid, SIGTERM);
  wait_exit(other);
}

TEST_F(EtcdLeaseTest, ConvleaseKeepsTheLeaseAlivePastItsTtl) {
  std::string out = tmp_ + "/child.json";
  // 3.5 s under a 2 s TTL: without keepalives the key would be gone before the end check.
  Proc c =
      spawn({CONVLEASE, "run", "--ttl", "2", "--", LEASE_PROBE, "--seconds", "3.5", "--json", out},
            tmp_ + "/run");
  Proc st;
  bool seen = wait_until([&] { return slurp(c.err).find("holding") != std::string::npos; }, 20);
  ASSERT_TRUE(seen) << slurp(c.err);
  st = spawn({CONVLEASE, "status"}, tmp_ + "/status");
  EXPECT_EQ(wait_exit(st), 0) << slurp(st.err);
  EXPECT_NE(slurp(st.out).find("HELD by"), std::string::npos) << slurp(st.out);
  EXPECT_NE(slurp(st.out).find("pid " + std::to_string(c.pid)), std::string::npos) << slurp(st.out);
  // Planted: Keeper::start() not called in convlease -> the key lapsed, child void: failed here.
  ASSERT_EQ(wait_exit(c, 60), 0) << slurp(c.err);
  json j = json::parse(slurp(out));
  EXPECT_EQ(j["verdict"], "valid") << j.dump(2);
  EXPECT_EQ(j["backend"], "etcd");
  EXPECT_TRUE(j["adopted"].get<bool>());
  EXPECT_GT(j["renewals"].get<int>(), 2);
  EXPECT_LT(j["max_renew_gap_s"].get<double>(), 2.0);
  EXPECT_EQ(j["fencing"]["kind"], "create_revision");
}

TEST_F(EtcdLeaseTest, RunLeaseAcquiresItselfAndRecordsRenewals) {
  RunLeaseOptions opt;
  opt.run_id = "self";
  opt.ttl_s = 2;
  auto lease = RunLease::open(opt);
  lease->verify_start();
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  lease->observe_sample("up3/4/cpu-f32/host", 0, 0, 0.1);
  lease->verify_end();
  json j = lease->to_json();
  EXPECT_EQ(lease->verdict(), "valid") << j.dump(2);
  EXPECT_FALSE(j["adopted"].get<bool>());
  EXPECT_EQ(j["holder"]["pid"].get<long>(), ::getpid());
  EXPECT_EQ(j["holder"]["run_id"], "self");
  EXPECT_GE(j["renewals"].get<int>(), 2);
  EXPECT_FALSE(j["last_renew_utc"].is_null());
  lease->release();
  auto again = RunLease::open(opt); // released: the key is free again
  again->release();
}

} // namespace
