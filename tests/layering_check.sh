#!/usr/bin/env bash
# The layering is enforced by the compiler (cmake/RingmendLayers.cmake): in
# each layer's view of the tree, a header of a lower layer it uses is found
# and one of a higher layer is not. Each case is preprocessed as a file of
# that layer would be; a forbidden include that compiles fails the test.
#
#   layering_check.sh CXX VIEWS_DIR SOURCE_DIR
set -u
cxx=$1 views=$2 src=$3
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
try() {  # try LAYER HEADER -> 0 when it preprocesses in LAYER's view
  printf '#include "%s"\n' "$2" >"$tmp/$1_case.cpp"
  "$cxx" -std=c++20 -E -I "$views/$1" -I "$src/core/include" "$tmp/$1_case.cpp" -o /dev/null 2>"$tmp/err"
}
expect() {  # expect allowed|forbidden LAYER HEADER
  # Forbidden means: the header itself is not found from this layer (not
  # some other error on the way).
  if try "$2" "$3"; then
    got=allowed
  elif grep -q "$3: No such file" "$tmp/err"; then
    got=forbidden
  else
    got="an error of another kind"
  fi
  if [ "$got" = "$1" ]; then
    echo "ok: $2 including $3: $got"
  else
    echo "FAILED: $2 including $3: $got, expected $1"
    [ "$got" != allowed ] && sed 's/^/    /' "$tmp/err" | head -5
    fail=1
  fi
}
expect allowed coll transport/channel.hpp
expect allowed gpu coll/algorithm.hpp
expect allowed membership coll/algorithm.hpp
expect allowed membership ulfm/launch_environment.hpp
expect allowed slurm ulfm/launch_environment.hpp
expect forbidden coll membership/epoch.hpp
expect forbidden transport coll/algorithm.hpp
expect forbidden topo transport/channel.hpp
expect forbidden ulfm membership/epoch.hpp
expect forbidden membership runtime/communicator_impl.hpp
expect forbidden membership gpu/gpu.hpp
expect forbidden slurm membership/epoch.hpp
expect forbidden coll ringmend/ringmend.hpp
[ "$fail" = 0 ] && echo "TEST PASSED: every layer sees its own and lower layers' headers, none above"
exit "$fail"
