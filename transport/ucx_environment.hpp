// ringmend's defaults for UCX's own variables, applied once per process
// before UCX starts (the Runtime does it before it creates the UcxContext;
// so do the benchmarks). Each variable is set only when the user has not set
// it; docs/environment.md lists them and says why.
//
// They go through the environment because UCX 1.13's transport layer reads
// its TCP keys only there (ucp_config_modify does not reach it), and one
// place that writes the environment, once, at start, is easier to reason
// about than a channel that does it whenever it is created.
#pragma once

#include <string_view>

namespace ringmend::transport {

// `net_devices`: the UCX device list the process will use (empty: UCX's
// choice). With two or more, UCX is set to stripe each message over them
// (at most kMaxStripedDevices).
void set_ucx_environment_defaults(std::string_view net_devices = {});

// UCX stripes a rendezvous over at most 4 rails (UCP_MAX_RAILS).
inline constexpr int kMaxStripedDevices = 4;

}  // namespace ringmend::transport
