#!/usr/bin/env bash
# The environment modules, end to end: install ringmend into a temporary
# prefix; for the Tcl modulefile (and, under Lmod, the Lua one) `module use`
# and `module load ringmend`, check every variable it sets and that unload
# undoes them; with the module loaded, build a program outside the tree with
# find_package(ringmend) and with pkg-config (no paths given by hand), and
# run it on the local cluster with srun and with the installed ringmend-run.
#   check_modules.sh BUILD_DIR SOURCE_DIR
set -u
build=$1 src=$2
. "$(dirname "$0")/cluster_lib.sh"

init=""
for f in /usr/share/lmod/lmod/init/bash /usr/share/modules/init/bash; do
  [ -r "$f" ] && { init=$f; break; }
done
[ -n "$init" ] || skip "no environment modules (Lmod or Environment Modules) installed; scripts/bootstrap.sh --with-cluster-tools installs Lmod"
lmod=0
[[ "$init" == */lmod/* ]] && lmod=1
need_cluster

prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; finish; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
tcl=$prefix/share/modulefiles/ringmend/$version
lua=$prefix/share/lmod/ringmend/$version.lua
[ -f "$tcl" ] && pass "Tcl modulefile installed: $tcl" || fail "no $tcl"
[ -f "$lua" ] && pass "Lua modulefile installed: $lua" || fail "no $lua"
grep -q "^set          root              {$prefix}$" "$tcl" && pass "the Tcl modulefile names the install prefix" ||
  fail "the Tcl modulefile does not name $prefix"

# Everything below runs in shells that load the module: no MPIEXEC, no
# CMAKE_PREFIX_PATH or PKG_CONFIG_PATH from outside.
unset MPIEXEC CMAKE_PREFIX_PATH PKG_CONFIG_PATH RINGMEND_ROOT
mkdir -p "$work/app"
cp "$src/tests/install/consumer.cpp" "$work/app/"
cp "$src/tests/install/CMakeLists.txt.in" "$work/app/CMakeLists.txt"

flavors=(tcl)
[ "$lmod" -eq 1 ] && flavors+=(lua) || echo "note: Environment Modules, not Lmod: the Lua modulefile is not checked"
for flavor in "${flavors[@]}"; do
  [ "$flavor" = tcl ] && dir=$prefix/share/modulefiles || dir=$prefix/share/lmod
  echo "=== $flavor modulefile ($dir)"
  cat >"$work/load.sh" <<EOF
. "$init"
module purge >/dev/null 2>&1
module use "$dir"
before_path=\$PATH
system_man=no
command -v man >/dev/null && man -w man >/dev/null 2>&1 && system_man=yes
module load ringmend || exit 10
echo "loaded: \$(module -t list 2>&1 | grep ringmend)"
echo "RINGMEND_ROOT=\$RINGMEND_ROOT"
echo "RINGMEND_VERSION=\$RINGMEND_VERSION"
echo "RINGMEND_MPI=\$RINGMEND_MPI"
echo "PATH=\$PATH"
echo "LD_LIBRARY_PATH=\$LD_LIBRARY_PATH"
echo "CMAKE_PREFIX_PATH=\$CMAKE_PREFIX_PATH"
echo "PKG_CONFIG_PATH=\$PKG_CONFIG_PATH"
echo "MANPATH=\$MANPATH"
echo "ringmend-run is \$(command -v ringmend-run)"
if command -v man >/dev/null; then
  echo "man page: \$(man -w ringmend-run 2>&1)"
  [ "\$system_man" = yes ] && ! man -w man >/dev/null 2>&1 && echo "system man pages LOST"
fi
pkg-config --modversion ringmend | sed 's/^/pkg-config: /'
module unload ringmend
# Lmod also folds duplicate entries: compare the sets of entries.
entries() { tr ':' '\n' <<<"\$1" | sort -u; }
[ "\$(entries "\$PATH")" = "\$(entries "\$before_path")" ] && echo "unload restored PATH" || echo "unload left PATH=\$PATH"
echo "after unload: RINGMEND_ROOT=\${RINGMEND_ROOT:-unset}"
EOF
  out=$(bash "$work/load.sh" 2>&1)
  echo "$out"
  has "$flavor: module load ringmend" "loaded: ringmend/$version"
  has "$flavor: variables" "RINGMEND_ROOT=$prefix" "RINGMEND_VERSION=$version" "RINGMEND_MPI=Open MPI" \
    "PATH=$prefix/bin:" "LD_LIBRARY_PATH=$prefix/$libdir" "CMAKE_PREFIX_PATH=$prefix" \
    "PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig" "MANPATH=$prefix/share/man" \
    "ringmend-run is $prefix/bin/ringmend-run" "pkg-config: $version"
  if command -v man >/dev/null; then has "$flavor: man ringmend-run" "man page: $prefix/share/man/man1/ringmend-run.1"; fi
  grep -q "system man pages LOST" <<<"$out" && fail "$flavor: loading the module hides the system's man pages"
  has "$flavor: module unload" "unload restored PATH" "after unload: RINGMEND_ROOT=unset"
done

# Build and run with the module loaded (the Tcl one: it works everywhere).
nodes=$(srun_nodes)
[ "$nodes" -eq 1 ] && echo "note: srun on one node (this cluster's TmpFS has no %n; see srun_mode.sh)"
cat >"$work/use.sh" <<EOF
. "$init"
module purge >/dev/null 2>&1
module use "$prefix/share/modulefiles"
module load ringmend || exit 10
set -e
cmake -S "$work/app" -B "$work/app/build" >"$work/app/cmake.log" 2>&1 || { cat "$work/app/cmake.log"; exit 11; }
cmake --build "$work/app/build" >>"$work/app/cmake.log" 2>&1 || { cat "$work/app/cmake.log"; exit 11; }
echo "built with find_package(ringmend)"
c++ -std=c++20 "$work/app/consumer.cpp" -o "$work/app/consumer_pc" \$(pkg-config --cflags --libs ringmend)
echo "built with pkg-config"
set +e
salloc -N 2 --ntasks-per-node=2 --overcommit --immediate=30 --time=3 -J ringmend-modules --quiet bash -c '
  echo "=== srun (module environment reaches the tasks)"
  srun --mpi=pmix -N $nodes -n $((2 * nodes)) "$work/app/build/consumer" 2>&1
  echo "=== srun exit \$?"
  echo "=== ringmend-run (installed, default mpirun)"
  ringmend-run -v "$work/app/consumer_pc" 2>&1
  echo "=== ringmend-run exit \$?"
  echo "=== network check (installed ringmend-netcheck)"
  ringmend-run --network-check-only 2>&1
  echo "=== network check exit \$?"
'
EOF
out=$(timeout -k 5 200 bash "$work/use.sh" 2>&1)
rc=$?
echo "$out"
echo "----"
[ "$rc" -eq 0 ] && pass "build and runs (exit 0)" || fail "build and runs: exit status $rc"
has "built against the module" "built with find_package(ringmend)" "built with pkg-config"
srun_part=$(sed -n '/^=== srun (/,/^=== srun exit/p' <<<"$out")
[ "$(grep -o "TEST PASSED[^T]*installed ringmend $version" <<<"$srun_part" | wc -l)" -eq $((2 * nodes)) ] &&
  grep -q "^=== srun exit 0" <<<"$srun_part" && pass "srun: $((2 * nodes)) ranks passed" || fail "srun run"
run_part=$(sed -n '/^=== ringmend-run (/,/^=== ringmend-run exit/p' <<<"$out")
[ "$(grep -o "TEST PASSED[^T]*installed ringmend $version" <<<"$run_part" | wc -l)" -eq 4 ] &&
  grep -q "^=== ringmend-run exit 0" <<<"$run_part" && pass "ringmend-run: 4 ranks passed" || fail "ringmend-run run"
has "the installed ringmend-run used the installed FT arguments and 2 nodes" \
  "FT arguments from $prefix/share/ringmend/ft_mpirun_args.txt" "4 ranks on n1:2,n2:2; fault tolerance on"
has "the installed network check ran" "network check: 2 nodes" "=== network check exit 0"
finish
