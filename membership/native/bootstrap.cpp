#include "membership/native/bootstrap.hpp"

#include <pmix.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <vector>

#include "ringmend/core/log.hpp"

namespace ringmend::membership::native {

namespace {

[[noreturn]] void pmix_failed(const char* call, pmix_status_t rc) {
  throw std::runtime_error(std::string("native membership start-up: ") + call +
                           " failed: " + PMIx_Error_string(rc));
}

// PMIx_Init to PMIx_Finalize.
class PmixClient {
 public:
  PmixClient() {
    const pmix_status_t rc = PMIx_Init(&self_, nullptr, 0);
    if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Init", rc);
  }
  ~PmixClient() { PMIx_Finalize(nullptr, 0); }
  PmixClient(const PmixClient&) = delete;
  PmixClient& operator=(const PmixClient&) = delete;

  const pmix_proc_t& self() const { return self_; }
  std::uint32_t job_size() const {
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, self_.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t* value = nullptr;
    const pmix_status_t rc = PMIx_Get(&job, PMIX_JOB_SIZE, nullptr, 0, &value);
    if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Get(job size)", rc);
    const std::uint32_t n = value->data.uint32;
    PMIX_VALUE_RELEASE(value);
    return n;
  }
  // Every process's `mine`, by rank.
  std::vector<std::string> exchange(const std::string& key, const std::string& mine, std::uint32_t n) {
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_STRING;
    value.data.string = const_cast<char*>(mine.c_str());
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key.c_str(), &value);
    if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Put", rc);
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Commit", rc);
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, self_.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t collect;
    PMIX_INFO_CONSTRUCT(&collect);
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(&job, 1, &collect, 1);
    PMIX_INFO_DESTRUCT(&collect);
    if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Fence", rc);
    std::vector<std::string> all(n);
    for (std::uint32_t r = 0; r < n; ++r) {
      pmix_proc_t peer;
      PMIX_LOAD_PROCID(&peer, self_.nspace, r);
      pmix_value_t* got = nullptr;
      rc = PMIx_Get(&peer, key.c_str(), nullptr, 0, &got);
      if (rc != PMIX_SUCCESS) pmix_failed("PMIx_Get", rc);
      if (got->type == PMIX_STRING && got->data.string) all[r] = got->data.string;
      PMIX_VALUE_RELEASE(got);
    }
    return all;
  }

 private:
  pmix_proc_t self_{};
};

// "address node pid": one record as text (node names have no spaces).
std::string record_text(const std::string& address, const std::string& node, int pid) {
  return address + " " + node + " " + std::to_string(pid);
}

PeerRecord parse_record(MemberId id, const std::string& text) {
  PeerRecord r;
  r.id = id;
  const auto a = text.find(' '), b = text.rfind(' ');
  if (a == std::string::npos || b == a)
    throw std::runtime_error("native membership start-up: process " + std::to_string(id) +
                             " published no usable record ('" + text + "')");
  r.address = text.substr(0, a);
  r.node = text.substr(a + 1, b - a - 1);
  r.pid = std::atoi(text.c_str() + b + 1);
  return r;
}

}  // namespace

bool pmix_available() { return std::getenv("PMIX_NAMESPACE") != nullptr; }

std::unique_ptr<Group> join_from_pmix(const GroupSettings& settings, const std::string& interface) {
  PmixClient pmix;
  const std::uint32_t n = pmix.job_size();
  const auto self = static_cast<MemberId>(pmix.self().rank);
  const std::uint64_t job_key = std::hash<std::string>{}(pmix.self().nspace);
  auto net = std::make_unique<ControlNet>(job_key, self, control_ip(interface));
  const auto texts =
      pmix.exchange("ringmend.control", record_text(net->address(), node_name(), ::getpid()), n);
  std::vector<PeerRecord> view;
  for (std::uint32_t r = 0; r < n; ++r) view.push_back(parse_record(static_cast<MemberId>(r), texts[r]));
  return std::make_unique<Group>(std::move(net), std::move(view), settings);
}

}  // namespace ringmend::membership::native
