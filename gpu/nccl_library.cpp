#include "gpu/nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "ringmend/core/error.hpp"

namespace ringmend::gpu {
namespace {

template <class F>
void bind(void* handle, F& f, const char* name, bool required) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f && required)
    throw Error(Errc::Internal, std::string("NCCL: ") + name + " is missing from the library opened");
}

struct Loaded {
  std::unique_ptr<NcclLibrary> library;
  std::string error;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded out;
    const char* chosen = std::getenv("RINGMEND_NCCL_LIBRARY");
    const std::string path = chosen && *chosen ? chosen : "libnccl.so.2";
    // Kept open for the process's life: NCCL's threads run its code.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      out.error = "cannot open NCCL (" + path + "): " + dlerror() +
                  "; put libnccl.so.2 on the library path or set RINGMEND_NCCL_LIBRARY";
      return out;
    }
    auto lib = std::make_unique<NcclLibrary>();
    try {
      bind(handle, lib->get_version, "ncclGetVersion", true);
      bind(handle, lib->get_unique_id, "ncclGetUniqueId", true);
      bind(handle, lib->comm_init_rank_config, "ncclCommInitRankConfig", true);
      bind(handle, lib->comm_abort, "ncclCommAbort", true);
      bind(handle, lib->comm_get_async_error, "ncclCommGetAsyncError", true);
      bind(handle, lib->get_error_string, "ncclGetErrorString", true);
      bind(handle, lib->reduce_scatter, "ncclReduceScatter", true);
      bind(handle, lib->all_gather, "ncclAllGather", true);
      bind(handle, lib->all_reduce, "ncclAllReduce", true);
      bind(handle, lib->comm_shrink, "ncclCommShrink", false);
      bind(handle, lib->comm_revoke, "ncclCommRevoke", false);
    } catch (const Error& e) {
      out.error = e.what();
      return out;
    }
    lib->get_version(&lib->version);
    lib->path = path;
    out.library = std::move(lib);
    return out;
  }();
  return l;
}

}  // namespace

const NcclLibrary& NcclLibrary::get() {
  const Loaded& l = loaded();
  if (!l.library) throw Error(Errc::Internal, l.error);
  return *l.library;
}

bool NcclLibrary::available() { return loaded().library != nullptr; }

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  const char* text = NcclLibrary::available() ? NcclLibrary::get().get_error_string(rc) : "?";
  throw Error(Errc::Internal, std::string("NCCL: ") + what + ": " + text + " (" + std::to_string(rc) + ")");
}

}  // namespace ringmend::gpu
