#!/usr/bin/env bash
# Installs everything ringmend needs on Debian 12 and builds Open MPI 5 with
# ULFM (fault tolerance) into a prefix outside the repository.
#
# Idempotent and cached: a second run checks each step and finishes in seconds.
#
#   scripts/bootstrap.sh            # packages + Open MPI 5 with ULFM
#   RINGMEND_DEPS=/path scripts/bootstrap.sh   # choose the dependency prefix
#
# Prints the Open MPI prefix on the last line as `RINGMEND_MPI_HOME=...`,
# and before it `RINGMEND_PYTHON=...` once the Python environment is there.
#
# Why build Open MPI: Debian 12 ships Open MPI 4.1 (no ULFM) and MPICH 4.0
# (exports the MPIX_ calls but never reports a killed rank). Open MPI 5.0.x
# with --with-ft=ulfm is the first that works; Debian's newer suite has its
# source package, fetched here through apt from the mirror this machine
# already uses.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
OMPI_VERSION=5.0.7
OMPI_DEB_VERSION=$OMPI_VERSION-1
OMPI_SUITE=${RINGMEND_OMPI_SUITE:-trixie}
# Fixes to Open MPI, applied to the source (scripts/patches/,
# each file says what it fixes and where upstream has it).
OMPI_PATCHES=(openmpi-5.0.7-ob1-send-error-after-free.patch
  openmpi-5.0.7-ob1-freed-request-dead-peer.patch
  openmpi-5.0.7-ob1-revoke-during-init.patch
  openmpi-5.0.7-ulfm-populate-failed-proc.patch
  openmpi-5.0.7-ulfm-failed-proc-in-new-comm.patch
  openpmix-5.0.7-ptl-tcp-nodelay.patch
  openpmix-5.0.7-ptl-rejected-client-double-release.patch
  prrte-5.0.7-count-failed-proc-once.patch)
# The build's revision: bumped whenever the flags or the patches change, so
# that a cached build from before is not reused.
OMPI_BUILD_REVISION=9
# The Python environment of --with-python (PyPI, pinned).
TORCH_VERSION=2.15.0
NUMPY_VERSION=2.4.6
PYTEST_VERSION=9.2.0
DEPS=${RINGMEND_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/ringmend-deps}
OMPI_PREFIX=${RINGMEND_MPI_HOME:-$DEPS/openmpi-$OMPI_VERSION-ulfm-r$OMPI_BUILD_REVISION}
JOBS=$(($(nproc) + 1))
WITH_CLUSTER_TOOLS=0
WITH_PYTHON=0
for arg in "$@"; do
  case "$arg" in
    --with-cluster-tools) WITH_CLUSTER_TOOLS=1 ;;
    --with-python) WITH_PYTHON=1 ;;
    --print-prefix) echo "$OMPI_PREFIX"; exit 0 ;;
    -h | --help)
      sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
      echo "  --with-cluster-tools  also install Slurm, Lmod, gloo and gnuplot"
      echo "  --with-python         also install what the Python package and its torch backend need"
      echo "                        (torch $TORCH_VERSION from PyPI, in a virtual environment: about 5 GB)"
      echo "  --print-prefix        print where Open MPI is (or will be) installed, and stop"
      exit 0
      ;;
    *) echo "bootstrap: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# Progress goes to stderr; stdout carries only the final RINGMEND_MPI_HOME=
# line, so callers can capture it.
exec 3>&1 1>&2

START=$SECONDS
STEP="start"
step() {
  STEP=$1
  printf '[bootstrap %4ds] %s\n' $((SECONDS - START)) "$STEP"
}
trap 'echo "bootstrap: FAILED in step \"$STEP\" (exit $?). See the output above." >&2' ERR

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# ---------------------------------------------------------------- packages
PACKAGES=(build-essential patch cmake ninja-build pkg-config git xz-utils file
  libhwloc-dev hwloc libucx-dev ucx-utils libevent-dev zlib1g-dev
  libgtest-dev googletest procps
  libcli11-dev nlohmann-json3-dev  # command lines, the benchmarks' JSON
  python3 python3-venv             # the pinned Python tools below
  libmpich-dev mpich)  # an MPI without ULFM: the configure test, the benchmark's MPICH baseline
if [ "$WITH_CLUSTER_TOOLS" = 1 ]; then
  # python3: bench/bench_report.py (standard library only); libpmix-dev:
  # srun --mpi=pmix opens libpmix.so, which only the -dev package ships;
  # clang + libclang-rt-14-dev: the libFuzzer target of the hostlist parser;
  # iproute2 (ip, tc, bridge) + util-linux (nsenter, unshare): the cluster's
  # nodes in network namespaces; spin: the model check of the membership
  # protocol (docs/membership.md).
  PACKAGES+=(slurmctld slurmd slurm-client lmod libgloo-dev gnuplot-nox python3 libpmix-dev
    clang libclang-rt-14-dev iproute2 util-linux spin)
fi
if [ "$WITH_PYTHON" = 1 ]; then
  # The Python package (python/): pybind11 and the headers of Debian's
  # interpreter; NumPy, torch and pytest come pinned from PyPI (below).
  PACKAGES+=(python3 python3-dev python3-venv pybind11-dev)
fi
step "Debian packages (${#PACKAGES[@]})"
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "  installing: ${missing[*]}"
  $SUDO apt-get update -qq
  # Slurm's packages try to start daemons; there may be no init system.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $SUDO apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "  all present"
fi

# ------------------------------------------- Python tools, pinned, from PyPI
# In a virtual environment of their own under the dependency cache:
# lizard, which the code-shape check runs (tests/code_shape_check.sh).
PYTOOLS="$DEPS/pytools"
LIZARD_VERSION=1.24.3
if [ -f "$PYTOOLS/.lizard-$LIZARD_VERSION" ] && [ -x "$PYTOOLS/bin/lizard" ]; then
  step "Python tools: cached in $PYTOOLS"
else
  step "Python tools: lizard $LIZARD_VERSION into $PYTOOLS"
  rm -rf "$PYTOOLS"
  python3 -m venv "$PYTOOLS"
  "$PYTOOLS/bin/pip" install -q --disable-pip-version-check "lizard==$LIZARD_VERSION"
  touch "$PYTOOLS/.lizard-$LIZARD_VERSION"
fi

# ------------------------------------ torch and NumPy, pinned, from PyPI
# The Python package is built for this environment's interpreter (Debian's
# Python 3.11): torch 2.x as users install it (PyPI's build, which carries
# CUDA's libraries and runs on a CPU too), NumPy, pytest. scripts/build.sh
# picks it up (RINGMEND_PYTHON= below).
TORCH_ENV="$DEPS/torch-$TORCH_VERSION"
TORCH_STAMP="$TORCH_ENV/.numpy-$NUMPY_VERSION-pytest-$PYTEST_VERSION"
if [ "$WITH_PYTHON" = 1 ]; then
  if [ -f "$TORCH_STAMP" ] && "$TORCH_ENV/bin/python" -c "import torch, numpy" 2>/dev/null; then
    step "torch $TORCH_VERSION: cached in $TORCH_ENV"
  else
    step "torch $TORCH_VERSION, NumPy $NUMPY_VERSION, pytest $PYTEST_VERSION into $TORCH_ENV (about 5 GB)"
    rm -rf "$TORCH_ENV"
    /usr/bin/python3 -m venv "$TORCH_ENV"  # Debian's interpreter, whose headers python3-dev has
    "$TORCH_ENV/bin/pip" install -q --disable-pip-version-check "torch==$TORCH_VERSION" \
      "numpy==$NUMPY_VERSION" "pytest==$PYTEST_VERSION"
    touch "$TORCH_STAMP"
  fi
fi

# ------------------------------------------------------- Open MPI with ULFM
STAMP="$OMPI_PREFIX/.ringmend-ulfm-ok"
if [ -f "$STAMP" ] && "$OMPI_PREFIX/bin/ompi_info" --parsable 2>/dev/null | grep -q "ftmpi"; then
  step "Open MPI $OMPI_VERSION with ULFM: cached in $OMPI_PREFIX"
else
  WORK="$DEPS/build"
  mkdir -p "$WORK"
  TARBALL="$WORK/openmpi_$OMPI_VERSION.orig.tar.xz"
  if [ ! -f "$TARBALL" ]; then
    step "fetch Open MPI $OMPI_VERSION source package from Debian $OMPI_SUITE"
    # Reuse the Debian mirror this machine is configured with; only the
    # suite changes. A private apt state keeps the system's lists untouched.
    mirror=$( (grep -rhE '^[[:space:]]*(URIs:|deb[[:space:]])' /etc/apt/sources.list \
      /etc/apt/sources.list.d/ 2>/dev/null || true) | grep -oE 'https?://[^ ]+/debian/?( |$)' \
      | grep -v -- '-security' | head -n 1 | tr -d ' ')
    [ -n "$mirror" ] || { echo "bootstrap: no Debian mirror found in /etc/apt sources" >&2; false; }
    APT="$WORK/apt"
    mkdir -p "$APT/lists/partial"
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $OMPI_SUITE main" >"$APT/sources.list"
    aptopts=(-o "Dir::Etc::sourcelist=$APT/sources.list" -o "Dir::Etc::sourceparts=-"
      -o "Dir::State::Lists=$APT/lists" -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
    apt-get "${aptopts[@]}" update -qq
    (cd "$WORK" && apt-get "${aptopts[@]}" source --download-only -qq "openmpi=$OMPI_DEB_VERSION")
    [ -f "$TARBALL" ] || { echo "bootstrap: apt did not deliver $TARBALL" >&2; false; }
  fi
  SRC="$WORK/openmpi-$OMPI_VERSION"
  step "unpack source"
  rm -rf "$SRC"
  tar -xJf "$TARBALL" -C "$WORK"
  cd "$SRC"
  for p in "${OMPI_PATCHES[@]}"; do
    step "patch: $p"
    patch -p1 --forward --quiet <"$TOP/scripts/patches/$p"
  done
  step "configure (log: $SRC/configure.log)"
  # Notes on the flags: internal PMIx/PRRTE (the tarball bundles matching
  # versions); external hwloc and libevent from Debian ("external", because
  # the libraries live in the multiarch directory); UCX for the ucx pml; no
  # Fortran/OSHMEM; --with-ft=ulfm builds the ftmpi extension.
  ./configure --prefix="$OMPI_PREFIX" --with-pmix=internal --with-prrte=internal \
    --with-ucx --with-hwloc=external --with-libevent=external \
    --disable-mpi-fortran --disable-oshmem --with-ft=ulfm --disable-sphinx \
    >configure.log 2>&1 || { tail -30 configure.log; false; }
  step "make -j$JOBS (5-20 min on 2 cores; log: $SRC/make.log)"
  (
    make -j"$JOBS" >make.log 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
      sleep 60
      kill -0 $pid 2>/dev/null && printf '[bootstrap %4ds]   ... still building (%s)\n' \
        $((SECONDS - START)) "$(grep -E '^Making all in' make.log | tail -n 1 | cut -c1-60)"
    done
    wait $pid
  ) || { tail -30 make.log; false; }
  step "make install"
  make install >install.log 2>&1 || { tail -30 install.log; false; }
  "$OMPI_PREFIX/bin/ompi_info" --parsable | grep -q ftmpi \
    || { echo "bootstrap: built Open MPI lacks the ftmpi (ULFM) extension" >&2; false; }
  touch "$STAMP"
  cd "$WORK" && rm -rf "$SRC"
fi

step "done in $((SECONDS - START)) s"
[ -f "$TORCH_STAMP" ] && echo "RINGMEND_PYTHON=$TORCH_ENV/bin/python" >&3
echo "RINGMEND_MPI_HOME=$OMPI_PREFIX" >&3
