// The fleet authority: etcd v3 through its JSON gateway (libcurl + nlohmann/json, no gRPC).
// Acquire = grant a lease with a TTL, then a txn that puts <prefix>/<host>/<resource> bound to that
// lease only if the key's CREATE revision is 0 (absent). The key's create_revision is the fencing
// token: every grant creates the key anew, so it changes on every grant. Keys, values are base64;
// 64-bit integers come back as strings.
#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "convbench/lease/lease.hpp"

namespace convbench::lease {
namespace {

using nlohmann::json;

std::string b64encode(const std::string &in) {
  static const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v =
        (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], t[v & 63]};
  }
  if (i + 1 == in.size()) {
    unsigned v = (unsigned char)in[i] << 16;
    out += {t[v >> 18], t[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8;
    out += {t[v >> 18], t[(v >> 12) & 63], t[(v >> 6) & 63], '='};
  }
  return out;
}

std::string b64decode(const std::string &in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : in) {
    int d;
    if (c >= 'A' && c <= 'Z')
      d = c - 'A';
    else if (c >= 'a' && c <= 'z')
      d = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      d = c - '0' + 52;
    else if (c == '+' || c == '-')
      d = 62;
    else if (c == '/' || c == '_')
      d = 63;
    else
      continue;
    v = (v << 6) | d;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

// etcd returns int64 as strings and omits zero values.
long long as_int(const json &j, const char *key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return 0;
  if (it->is_number_integer())
    return it->get<long long>();
  if (it->is_string()) {
    try {
      return std::stoll(it->get<std::string>());
    } catch (...) {
    }
  }
  return 0;
}

size_t collect(char *p, size_t size, size_t n, void *out) {
  static_cast<std::string *>(out)->append(p, size * n);
  return size * n;
}

class EtcdError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

// POST <endpoint>/v3/<path> with a JSON body; throws EtcdError on transport or gRPC errors.
json post(const std::string &endpoint, const std::string &path, const json &body,
          double timeout_s) {
  static CurlGlobal global;
  CURL *c = curl_easy_init();
  if (!c)
    throw EtcdError("curl_easy_init failed");
  std::string url = endpoint + "/v3/" + path, req = body.dump(), resp;
  char err[CURL_ERROR_SIZE] = {};
  struct curl_slist *hdr = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); // called from the renewal thread
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::min(timeout_s, 2.0) * 1000));
  CURLcode rc = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(hdr);
  curl_easy_cleanup(c);
  if (rc != CURLE_OK)
    throw EtcdError("etcd at " + endpoint + " unreachable (" + path +
                    "): " + (err[0] ? err : curl_easy_strerror(rc)));
  json j;
  try {
    j = json::parse(resp);
  } catch (...) {
    throw EtcdError("etcd " + path + " answered HTTP " + std::to_string(status) +
                    " with non-JSON: " + resp.substr(0, 200));
  }
  if (j.contains("error") || status >= 400)
    throw EtcdError("etcd " + path + " error: " + j.value("message", j.value("error", resp)));
  return j;
}

class EtcdLease final : public Lease {
public:
  EtcdLease(std::string endpoint, std::string key, long long lease_id, long long rev, Resource r,
            Holder h, double ttl, bool adopted)
      : ep_(std::move(endpoint)), key_(std::move(key)), id_(lease_id), rev_(rev),
        res_(std::move(r)), holder_(std::move(h)), ttl_(ttl), adopted_(adopted) {}
  ~EtcdLease() override { release(); }

  std::string backend() const override { return "etcd"; }
  const Resource &resource() const override { return res_; }
  const Holder &holder() const override { return holder_; }
  std::string token() const override { return std::to_string(rev_); }
  double ttl_s() const override { return ttl_; }
  bool expires() const override { return true; }

  Check verify() override {
    Check c;
    c.at_utc = utc_now();
    try {
      json r = post(ep_, "kv/range", {{"key", b64encode(key_)}}, timeout());
      auto kvs = r.value("kvs", json::array());
      if (kvs.empty()) {
        c.detail = "key " + key_ + " is gone: the lease lapsed or was revoked";
        return c;
      }
      long long rev = as_int(kvs[0], "create_revision"), lid = as_int(kvs[0], "lease");
      if (rev != rev_ || lid != id_) {
        c.detail = "token changed: key " + key_ + " now has create_revision " +
                   std::to_string(rev) + " (ours " + std::to_string(rev_) + "), held by " +
                   Holder::from_json(parse_value(kvs[0])).describe();
        return c;
      }
      json t = post(ep_, "lease/timetolive", {{"ID", std::to_string(id_)}}, timeout());
      long long left = as_int(t, "TTL");
      if (left <= 0) {
        c.detail =
            "etcd lease " + std::to_string(id_) + " has expired (TTL " + std::to_string(left) + ")";
        return c;
      }
      if (adopted_) {
        Holder h = Holder::from_json(parse_value(kvs[0]));
        if (h.pid != holder_.pid || h.run_id != holder_.run_id) {
          c.detail = "key value names " + h.describe() + ", not the inherited holder";
          return c;
        }
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        if (h.host == host && !is_ancestor(h.pid)) {
          c.detail = "holder pid " + std::to_string(h.pid) +
                     " is not an ancestor of this process: the inherited lease is not ours";
          return c;
        }
      }
      c.ok = true;
      c.detail = "key " + key_ + " create_revision " + std::to_string(rev_) + ", lease " +
                 std::to_string(id_) + " TTL left " + std::to_string(left) + " s";
    } catch (const std::exception &e) {
      c.detail = e.what();
    }
    return c;
  }

  Check renew() override {
    if (adopted_)
      return verify(); // the owner (convlease) keeps it alive; we only check
    Check c;
    c.at_utc = utc_now();
    try {
      json r = post(ep_, "lease/keepalive", {{"ID", std::to_string(id_)}}, timeout());
      long long left = as_int(r.value("result", json::object()), "TTL");
      c.ok = left > 0;
      c.detail = c.ok ? "keepalive TTL " + std::to_string(left) + " s"
                      : "keepalive found etcd lease " + std::to_string(id_) + " expired";
    } catch (const std::exception &e) {
      c.detail = std::string("keepalive failed: ") + e.what();
    }
    return c;
  }

  void release() override {
    if (adopted_ || released_)
      return;
    released_ = true;
    try {
      post(ep_, "lease/revoke", {{"ID", std::to_string(id_)}}, timeout());
    } catch (...) {
      // Already expired or etcd gone: nothing left to release.
    }
  }

  json describe() const override {
    return {{"backend", "etcd"},
            {"resource", res_.to_json()},
            {"holder", holder_.to_json()},
            {"token", token()},
            {"ttl_s", ttl_},
            {"adopted", adopted_},
            {"fencing",
             {{"kind", "create_revision"},
              {"create_revision", rev_},
              {"key", key_},
              {"lease_id", std::to_string(id_)},
              {"endpoint", ep_}}}};
  }

  std::string export_env() const override {
    return json{{"backend", "etcd"},
                {"resource", res_.to_json()},
                {"token", token()},
                {"holder", holder_.to_json()},
                {"ttl_s", ttl_},
                {"key", key_},
                {"lease_id", std::to_string(id_)},
                {"endpoint", ep_}}
        .dump();
  }

  static json parse_value(const json &kv) {
    try {
      return json::parse(b64decode(kv.value("value", "")));
    } catch (...) {
      return json::object();
    }
  }

private:
  double timeout() const { return std::max(1.0, ttl_ / 3); }
  std::string ep_, key_;
  long long id_, rev_;
  Resource res_;
  Holder holder_;
  double ttl_;
  bool adopted_;
  bool released_ = false;
};

class EtcdBackend final : public Backend {
public:
  explicit EtcdBackend(const Policy &p) : policy_(p) {
    if (p.endpoint.empty())
      throw LeaseRefused("the etcd lease backend needs an endpoint: set endpoint in the lease "
                         "policy or CONVBENCH_LEASE_ENDPOINT=http://host:2379");
    ep_ = p.endpoint;
    while (!ep_.empty() && ep_.back() == '/')
      ep_.pop_back();
    if (ep_.find("://") == std::string::npos)
      ep_ = "http://" + ep_;
  }
  std::string name() const override { return "etcd"; }

  std::string key_for(const Resource &r) const {
    return policy_.prefix + "/" + r.host + "/" + r.name();
  }

  std::unique_ptr<Lease> acquire(const AcquireRequest &req) override {
    const double ttl = std::max(2.0, std::ceil(req.ttl_s > 0 ? req.ttl_s : policy_.ttl_s));
    const double to = std::max(1.0, ttl / 3);
    const std::string key = key_for(req.resource);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(req.wait_s));
    auto backoff = std::chrono::milliseconds(50);
    for (;;) {
      try {
        json g = post(ep_, "lease/grant", {{"TTL", static_cast<long long>(ttl)}}, to);
        long long id = as_int(g, "ID");
        if (id == 0)
          throw EtcdError("lease/grant returned no ID: " + g.dump());
        Holder h = req.holder;
        h.acquired_utc = utc_now();
        json value = h.to_json();
        value["resource"] = req.resource.to_json();
        json txn = {{"compare", json::array({{{"key", b64encode(key)},
                                              {"result", "EQUAL"},
                                              {"target", "CREATE"},
                                              {"create_revision", "0"}}})},
                    {"success", json::array({{{"request_put",
                                               {{"key", b64encode(key)},
                                                {"value", b64encode(value.dump())},
                                                {"lease", std::to_string(id)}}}}})},
                    {"failure", json::array({{{"request_range", {{"key", b64encode(key)}}}}})}};
        json t = post(ep_, "kv/txn", txn, to);
        if (t.value("succeeded", false)) {
          // Read the token back from the authority rather than infer it from the header.
          json r = post(ep_, "kv/range", {{"key", b64encode(key)}}, to);
          auto kvs = r.value("kvs", json::array());
          if (kvs.empty() || as_int(kvs[0], "lease") != id)
            throw EtcdError("key " + key + " vanished right after the txn that created it");
          long long rev = as_int(kvs[0], "create_revision");
          return std::make_unique<EtcdLease>(ep_, key, id, rev, req.resource, h, ttl, false);
        }
        // Busy: give back the lease we granted, name the holder, wait or refuse.
        try {
          post(ep_, "lease/revoke", {{"ID", std::to_string(id)}}, to);
        } catch (...) {
        }
        json holder_desc = "an unknown holder";
        long long their_rev = 0;
        for (auto &resp : t.value("responses", json::array())) {
          auto kvs = resp.value("response_range", json::object()).value("kvs", json::array());
          if (!kvs.empty()) {
            holder_desc = Holder::from_json(EtcdLease::parse_value(kvs[0])).describe();
            their_rev = as_int(kvs[0], "create_revision");
          }
        }
        if (std::chrono::steady_clock::now() >= deadline)
          throw LeaseRefused(req.resource.name() + " on " + req.resource.host +
                             " is busy: etcd key " + key + " at " + ep_ + " is held by " +
                             holder_desc.get<std::string>() + " (token " +
                             std::to_string(their_rev) + ")" +
                             (req.wait_s > 0 ? ""
                                             : "; to wait for it: bench_conv --lease-wait S, "
                                               "convlease run --wait S"));
      } catch (const EtcdError &e) {
        throw LeaseRefused(e.what());
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(500));
    }
  }

  std::unique_ptr<Lease> adopt(const json &j) override {
    Resource r = Resource::from_json(j.value("resource", json::object()));
    std::string key = j.value("key", "");
    // The authority is this process's own policy (endpoint, prefix), never the environment.
    if (key != key_for(r))
      throw LeaseRefused("inherited etcd lease names key " + key + ", but the key for " + r.name() +
                         " under this site's prefix is " + key_for(r));
    if (j.value("endpoint", "") != ep_)
      throw LeaseRefused("inherited etcd lease names endpoint " + j.value("endpoint", "") +
                         ", but this site's authority is " + ep_);
    long long rev = 0, id = 0;
    try {
      rev = std::stoll(j.value("token", ""));
      id = std::stoll(j.value("lease_id", ""));
    } catch (...) {
      throw LeaseRefused("inherited etcd lease lacks a numeric token or lease_id");
    }
    auto lease = std::make_unique<EtcdLease>(ep_, key, id, rev, r,
                                             Holder::from_json(j.value("holder", json::object())),
                                             j.value("ttl_s", policy_.ttl_s), true);
    Check c = lease->verify();
    if (!c.ok)
      throw LeaseRefused("inherited etcd lease refused: " + c.detail);
    return lease;
  }

  json status() override {
    std::string from = policy_.prefix + "/", to = policy_.prefix + "0"; // '0' follows '/'
    json r;
    try {
      r = post(ep_, "kv/range", {{"key", b64encode(from)}, {"range_end", b64encode(to)}}, 5);
    } catch (const EtcdError &e) {
      throw LeaseRefused(e.what());
    }
    json out = json::array();
    for (auto &kv : r.value("kvs", json::array())) {
      json v = EtcdLease::parse_value(kv);
      out.push_back({{"key", b64decode(kv.value("key", ""))},
                     {"held", true},
                     {"resource", v.value("resource", json())},
                     {"token", std::to_string(as_int(kv, "create_revision"))},
                     {"lease_id", std::to_string(as_int(kv, "lease"))},
                     {"holder", Holder::from_json(v).to_json()}});
    }
    return out;
  }

private:
  Policy policy_;
  std::string ep_;
};

} // namespace
} // namespace convbench::lease

CONVBENCH_LEASE_BACKEND(etcd, true, [](const convbench::lease::Policy &p) {
  return std::unique_ptr<convbench::lease::Backend>(new convbench::lease::EtcdBackend(p));
})
