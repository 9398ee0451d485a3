#!/usr/bin/env bash
# The model check of recovery by the step (docs/subgroups.md, "Recovery by
# the step"): SPIN's exhaustive safety search of
# membership/model/step_recovery.pml in several configurations (steps,
# spares, crashes), each of which must finish with no error and no search
# cut short; then the two rules the design rejects, each of which must be
# caught stuck (an invalid end state), so that the check is known to be
# able to fail.
#
#   check_step_recovery_model.sh MODEL.pml
#
# Exits 77 (skipped) when spin or a C compiler is missing.
set -uo pipefail
model=${1:?usage: check_step_recovery_model.sh MODEL.pml}
# shellcheck source=spin_search.sh
source "$(dirname "$0")/spin_search.sh"
spin_prepare step_recovery_model "$model"
fails=0

echo "step recovery model: the rule, every configuration must pass"
for cfg in "-DSTEPS=2 -DSPARES=1 -DMAXCRASH=1" "-DSTEPS=3 -DSPARES=1 -DMAXCRASH=1" \
  "-DSTEPS=3 -DSPARES=0 -DMAXCRASH=0"; do
  # shellcheck disable=SC2086
  must_pass "$cfg" $cfg
done

echo "step recovery model: the rejected rules, each must be caught"
for mutant in CALL_RULE GEN_NOW; do
  must_be_caught "$mutant" -DSTEPS=2 -DSPARES=1 -DMAXCRASH=1 "-D$mutant"
done

if [ "$fails" -gt 0 ]; then
  echo "step recovery model: $fails check(s) failed"
  exit 1
fi
echo "step recovery model: TEST PASSED"
