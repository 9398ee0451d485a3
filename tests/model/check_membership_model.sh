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
for c in spin cc; do
  command -v "$c" >/dev/null 2>&1 ||
    { echo "membership_model: SKIPPED: '$c' not found (scripts/bootstrap.sh --with-cluster-tools installs spin)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/model.pml"
cd "$work" || exit 1
fails=0

# search NAME FLAGS...: prints pan's summary; sets $verdict to ok, error or incomplete.
search() {
  local name=$1 out t0
  shift
  rm -f pan pan.* model.pml.trail
  if ! spin -a "$@" model.pml >spin.log 2>&1 || ! cc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048 -o pan pan.c >cc.log 2>&1; then
    cat spin.log cc.log
    verdict=broken
    return
  fi
  t0=$(date +%s%N)
  out=$(./pan -m2000000 -c1 2>&1)
  local states ms
  states=$(sed -n 's/^ *\([0-9e+.]*\) states, stored.*/\1/p' <<<"$out" | head -n 1)
  ms=$((($(date +%s%N) - t0) / 1000000))
  if grep -qE "errors: [1-9]" <<<"$out"; then
    verdict=error
    echo "  $name: $(grep -m1 -E '^pan:1: ' <<<"$out")"
    spin -t -p "$@" model.pml 2>/dev/null | tail -n 40 >trail.txt
  elif grep -q "reached -DMEMLIM bound\|max search depth too small\|Search not completed" <<<"$out"; then
    verdict=incomplete
    echo "  $name: the search did not complete ($states states)"
  else
    verdict=ok
    echo "  $name: $states states, no error ($ms ms)"
  fi
}

echo "membership model: the protocol, every configuration must pass"
for cfg in "-DN=3 -DMAXCRASH=1 -DMAXLOSS=1 -DMAXFALSE=1" \
  "-DN=3 -DMAXCRASH=1 -DMAXLOSS=2 -DMAXFALSE=0" \
  "-DN=3 -DMAXCRASH=0 -DMAXLOSS=1 -DMAXFALSE=2" \
  "-DN=4 -DMAXCRASH=2 -DMAXLOSS=1 -DMAXFALSE=0" \
  "-DN=4 -DMAXCRASH=1 -DMAXLOSS=2 -DMAXFALSE=0"; do
  # shellcheck disable=SC2086
  search "$cfg" $cfg
  if [ "$verdict" != ok ]; then
    echo "FAIL: $cfg: $verdict"
    [ -f trail.txt ] && sed 's/^/    /' trail.txt
    fails=$((fails + 1))
  fi
done

echo "membership model: mutants, each must be caught"
for mutant in MUTANT_SMALL_QUORUM MUTANT_IGNORE_ACCEPTED; do
  search "$mutant" -DN=3 -DMAXCRASH=1 -DMAXLOSS=1 -DMAXFALSE=1 "-D$mutant"
  if [ "$verdict" = error ]; then
    echo "  $mutant: caught, as it must be"
  else
    echo "FAIL: the mutant $mutant was not caught ($verdict): the check cannot fail"
    fails=$((fails + 1))
  fi
done

if [ "$fails" -gt 0 ]; then
  echo "membership model: $fails check(s) failed"
  exit 1
fi
echo "membership model: TEST PASSED"
