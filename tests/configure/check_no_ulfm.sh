#!/usr/bin/env bash
# Configure against a real MPI without ULFM (Debian's MPICH, which exports
# MPIX_ names but never reports a killed rank): configure must stop with a
# message that says how to get a ULFM MPI, and must succeed with a warning
# when RINGMEND_REQUIRE_ULFM=OFF.
#   check_no_ulfm.sh SOURCE_DIR
set -u
src=$1
mpicc=/usr/bin/mpicc.mpich
if [ ! -x "$mpicc" ]; then
  echo "SKIP: no MPI without ULFM installed ($mpicc; scripts/bootstrap.sh installs libmpich-dev)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(-DMPI_C_COMPILER=$mpicc -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich -DRINGMEND_BUILD_TESTS=OFF
  -DRINGMEND_BUILD_BENCH=OFF -DRINGMEND_BUILD_EXAMPLES=OFF)
if cmake -S "$src" -B "$work/a" "${common[@]}" >"$work/a.log" 2>&1; then
  echo "FAIL: configure accepted an MPI without ULFM"; cat "$work/a.log"; exit 1
fi
grep -q "has no ULFM" "$work/a.log" && grep -q "bootstrap.sh" "$work/a.log" \
  || { echo "FAIL: configure failed without the expected message"; cat "$work/a.log"; exit 1; }
echo "configure without ULFM stops with:"; grep -A3 "has no ULFM" "$work/a.log" | head -5
cmake -S "$src" -B "$work/b" "${common[@]}" -DRINGMEND_REQUIRE_ULFM=OFF >"$work/b.log" 2>&1 \
  || { echo "FAIL: RINGMEND_REQUIRE_ULFM=OFF did not configure"; cat "$work/b.log"; exit 1; }
grep -q "WITHOUT fault tolerance" "$work/b.log" || { echo "FAIL: no warning"; exit 1; }
echo "RINGMEND_REQUIRE_ULFM=OFF configures with a warning"
