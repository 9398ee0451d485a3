// membership/ — who the members are, and how each epoch is made (depends on
// coll/, transport/, topo/, ulfm/ and core/).
//
// What this folder offers the runtime:
//   * member.hpp: member ids (kept across epochs; new ones for joiners) and
//     MemberInfo, what members tell each other;
//   * epoch.hpp: Epoch, one membership with its plan and channels;
//   * epoch_builder.hpp: EpochBuilder, the one way an epoch is made, from
//     Start, Shrink{lost} or Grow{joiners}, in four named steps (exchange,
//     plan, fabric, agreement);
//   * address_exchange.hpp: UCX addresses fetched from the peers that need
//     them, not allgathered;
//   * spare_pool.hpp: SparePool, where spare processes wait, and the rounds
//     that admit them (the control group of a Grow); pool_roster.hpp, what
//     a round decides; ulfm_spare_pool.hpp and native/native_spare_pool.hpp,
//     its two backends.
//   * native/: the native membership protocol (docs/membership.md), for
//     jobs launched without mpirun: view_change.hpp (the view change, a
//     state machine without I/O), group.hpp (Group: failure detector,
//     view changes and an all-gather over TCP), bootstrap.hpp (start-up
//     under srun --mpi=pmix). Needs neither MPI nor UCX (its own
//     libraries, ringmend_membership_native and ringmend_membership_pmix).
// A new membership transition (a spawn, a connect) is one more alternative
// of Transition and the communicator that it brings; the steps stay.
#pragma once

#include "membership/address_exchange.hpp"
#include "membership/epoch.hpp"
#include "membership/epoch_builder.hpp"
#include "membership/member.hpp"
#include "membership/spare_pool.hpp"
