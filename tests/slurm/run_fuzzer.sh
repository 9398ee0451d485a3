#!/usr/bin/env bash
# Runs the libFuzzer target of the Slurm list parsers for SECONDS, starting
# from the seed corpus (copied: libFuzzer adds what it finds to its first
# corpus directory). Exits 77 (skipped) when the target was not built.
#   run_fuzzer.sh FUZZER SEED_DIR SECONDS
set -u
fuzzer=$1 seeds=$2 seconds=$3
if [ -z "$fuzzer" ] || [ ! -x "$fuzzer" ]; then
  echo "hostlist_fuzz: SKIPPED: no libFuzzer target was built (needs clang++ with libFuzzer, e.g. Debian's clang and libclang-rt-dev; configure with RINGMEND_BUILD_FUZZ=ON)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$seeds"/* "$work/corpus/"
cd "$work" || exit 1
# A crash leaves crash-* here and makes libFuzzer exit non-zero.
"$fuzzer" -max_total_time="$seconds" -seed=1 -rss_limit_mb=1024 -max_len=256 -print_final_stats=1 corpus 2>&1 | tail -n 20
rc=${PIPESTATUS[0]}
for f in crash-* leak-* timeout-* oom-*; do
  [ -e "$f" ] && { echo "reproducer $f:"; od -c "$f" | head -n 5; }
done
exit "$rc"
