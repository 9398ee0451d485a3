# SPIN's exhaustive safety search of a model, for the model checks
# (check_membership_model.sh, check_step_recovery_model.sh); sourced.
#
#   spin_prepare CHECK_NAME MODEL.pml   copies the model into a temporary
#                                       directory and enters it; exits 77
#                                       (skipped) when spin or cc is missing
#   search NAME FLAGS...                prints pan's summary and sets
#                                       $verdict to ok, error, incomplete or
#                                       broken; on an error, trail.txt holds
#                                       the end of the counterexample

spin_prepare() {
  local check=$1 model=$2 c
  for c in spin cc; do
    command -v "$c" >/dev/null 2>&1 ||
      { echo "$check: SKIPPED: '$c' not found (scripts/bootstrap.sh --with-cluster-tools installs spin)"; exit 77; }
  done
  spin_work=$(mktemp -d)
  trap 'rm -rf "$spin_work"' EXIT
  cp "$model" "$spin_work/model.pml"
  cd "$spin_work" || exit 1
}

search() {
  local name=$1 out t0 states ms
  shift
  rm -f pan pan.* model.pml.trail trail.txt
  if ! spin -a "$@" model.pml >spin.log 2>&1 || ! cc -O2 -w -DSAFETY -DCOLLAPSE -DMEMLIM=2048 -o pan pan.c >cc.log 2>&1; then
    cat spin.log cc.log
    verdict=broken
    return
  fi
  t0=$(date +%s%N)
  out=$(./pan -m2000000 -c1 2>&1)
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

# must_pass NAME FLAGS... / must_be_caught NAME FLAGS...: a search that
# must find no error (a configuration of the protocol), or must find one (a
# broken variant: the check can fail); each miss adds one to $fails.
must_pass() {
  search "$@"
  if [ "$verdict" != ok ]; then
    echo "FAIL: $1: $verdict"
    [ -f trail.txt ] && sed 's/^/    /' trail.txt
    fails=$((fails + 1))
  fi
}

must_be_caught() {
  search "$@"
  if [ "$verdict" = error ]; then
    echo "  $1: caught, as it must be"
  else
    echo "FAIL: $1 was not caught ($verdict): the check cannot fail"
    fails=$((fails + 1))
  fi
}
