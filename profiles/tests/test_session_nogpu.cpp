// The counter session where nothing can be collected: no GPU (CI), or a build without CUDA. It
// must answer a well-formed block, never throw, never crash, and not run the work.
#include <gtest/gtest.h>

#include "convbench/profiles/counters.hpp"

#if CONVBENCH_PROFILES_HAVE_CUPTI
#include <cuda_runtime_api.h>
#endif

namespace cp = convbench::profiles;
using nlohmann::json;

namespace {

int visible_devices() {
#if CONVBENCH_PROFILES_HAVE_CUPTI
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess)
    n = 0;
  cudaGetLastError();
  return n;
#else
  return 0;
#endif
}

} // namespace

// Planted fault (seen failing): the refused session's capture() ran the work before answering;
// `ran` became true.
TEST(CounterSessionNoGpu, AnswersUnavailableOrNotCollected) {
  if (visible_devices() > 0)
    GTEST_SKIP() << "a GPU is visible, so the no-GPU path cannot be reached on this machine; "
                    "profiles_gpu_tests covers the session there";
  const cp::Profile p = cp::load_profile("fp-throughput", PROFILES_SOURCE_DIR);
  std::unique_ptr<cp::CounterSession> s;
  ASSERT_NO_THROW(s = cp::CounterSession::open(p, 0));
  ASSERT_TRUE(s);
  bool ran = false;
  json b;
  ASSERT_NO_THROW(b = s->capture([&] { ran = true; }, 1e-3, 1e9));
  EXPECT_FALSE(ran) << "a session that cannot collect must not run the work again";
  EXPECT_EQ(b.at("profile"), "fp-throughput");
#if CONVBENCH_PROFILES_HAVE_CUPTI
  EXPECT_EQ(b.at("status"), "unavailable") << b.dump();
  EXPECT_EQ(b.at("call"), "cudaGetDeviceCount") << b.dump();
  ASSERT_TRUE(b.at("message").is_string());
  EXPECT_FALSE(b.at("message").get<std::string>().empty());
  EXPECT_EQ(b.at("reason"), "cudaGetDeviceCount: " + b.at("message").get<std::string>());
  std::cout << "unavailable block here: " << b.dump() << "\n";
#else
  EXPECT_EQ(b, json({{"status", "not-collected"},
                     {"profile", "fp-throughput"},
                     {"reason", "built without CUDA"}}));
#endif
  EXPECT_EQ(s->describe(), b);
  // A second capture answers the same: nothing is left half-open.
  EXPECT_EQ(s->capture([&] { ran = true; }, 1e-3, 1e9), b);
  EXPECT_FALSE(ran);
}

// A device index that does not exist is refused on every machine, GPU or not.
TEST(CounterSessionNoGpu, MissingDeviceIsUnavailable) {
  const cp::Profile p = cp::load_profile("memory", PROFILES_SOURCE_DIR);
  std::unique_ptr<cp::CounterSession> s;
  ASSERT_NO_THROW(s = cp::CounterSession::open(p, 99));
  const json b = s->capture([] {}, 1e-3, 1e9);
#if CONVBENCH_PROFILES_HAVE_CUPTI
  EXPECT_EQ(b.at("status"), "unavailable") << b.dump();
  EXPECT_EQ(b.at("call"), "cudaGetDeviceCount") << b.dump();
  if (visible_devices() > 0) {
    EXPECT_NE(b.at("message").get<std::string>().find("device 99 does not exist"),
              std::string::npos)
        << b.dump();
  }
#else
  EXPECT_EQ(b.at("status"), "not-collected");
#endif
}
