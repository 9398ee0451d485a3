#!/usr/bin/env bash
# The model check of the native membership protocol (docs/membership.md):
# SPIN's exhaustive safety search of membership/model/view_change.pml in
# several configurations (processes, crashes, lost messages, wrong
# suspicions), each of which must finish with no error, no search cut short
# by memory or depth; then two mutants of the protocol, each of which must be
# caught (an assertion violated), so that the check is known to be able to fail.
#
#   check_membership_model.sh MODEL.pml
#
# Exits 77 (skipped) when spin or a C compiler is missing.
set -uo pipefail
model=${1:?usage: check_membership_model.sh MODEL.pml}
# shellcheck source=spin_search.sh
source "$(dirname "$0")/spin_search.sh"
spin_prepare membership_model "$model"
fails=0

echo "membership model: the protocol, every configuration must pass"
for cfg in "-DN=3 -DMAXCRASH=1 -DMAXLOSS=1 -DMAXFALSE=1" \
  "-DN=3 -DMAXCRASH=1 -DMAXLOSS=2 -DMAXFALSE=0" \
  "-DN=3 -DMAXCRASH=0 -DMAXLOSS=1 -DMAXFALSE=2" \
  "-DN=4 -DMAXCRASH=2 -DMAXLOSS=1 -DMAXFALSE=0" \
  "-DN=4 -DMAXCRASH=1 -DMAXLOSS=2 -DMAXFALSE=0"; do
  # shellcheck disable=SC2086
  must_pass "$cfg" $cfg
done

echo "membership model: mutants, each must be caught"
for mutant in MUTANT_SMALL_QUORUM MUTANT_IGNORE_ACCEPTED; do
  must_be_caught "$mutant" -DN=3 -DMAXCRASH=1 -DMAXLOSS=1 -DMAXFALSE=1 "-D$mutant"
done

if [ "$fails" -gt 0 ]; then
  echo "membership model: $fails check(s) failed"
  exit 1
fi
echo "membership model: TEST PASSED"
