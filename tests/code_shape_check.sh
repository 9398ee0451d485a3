#!/usr/bin/env bash
# The library's code stays in pieces a reader can hold: no source file over
# 600 lines, no function over 80 (lizard's length: its lines from the head
# to the closing brace). Tests, benchmarks and examples are not held to it.
# A function over the limit that cannot be split yet is named, with the
# reason, in code_shape_exceptions.txt; one named there that no longer
# needs it fails the check too, so the list only shrinks.
#
#   code_shape_check.sh LIZARD SOURCE_DIR
set -u
lizard=$1 src=$2
folders=(core ulfm topo transport coll membership runtime slurm gpu python/src)
exceptions="$src/tests/code_shape_exceptions.txt"
cd "$src" || exit 1
fail=0
while read -r lines file; do
  [ "$file" = total ] && continue
  if [ "$lines" -gt 600 ]; then
    echo "FAILED: $file has $lines lines (at most 600)"
    fail=1
  fi
done < <(find "${folders[@]}" -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' | sort | xargs wc -l)

# lizard -w prints one line per function over a threshold: length 80 here,
# the others set out of reach.
long=$("$lizard" -l cpp -w -L 80 -C 100000 -a 1000 -T nloc=100000 "${folders[@]}" 2>&1) || true
known=$(grep -v '^#' "$exceptions" | cut -d' ' -f1 | sed '/^$/d')
while IFS= read -r line; do
  [ -z "$line" ] && continue
  name=$(sed -E 's/.*warning: ([^ ]+) has .*/\1/' <<<"$line")
  length=$(sed -E 's/.* ([0-9]+) length.*/\1/' <<<"$line")
  where=${line%%: warning*}
  if grep -qxF "$name" <<<"$known"; then
    echo "known: $name ($where, $length lines): $(grep -F "$name " "$exceptions" | cut -d' ' -f2-)"
  else
    echo "FAILED: $name ($where) is $length lines long (at most 80)"
    fail=1
  fi
done <<<"$long"
for name in $known; do
  if ! grep -qF "warning: $name has" <<<"$long"; then
    echo "FAILED: $name is listed in tests/code_shape_exceptions.txt but is within the limit: remove it"
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "PASS: every library file <= 600 lines, every function <= 80 lines but the listed"
exit "$fail"
