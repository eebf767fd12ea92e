#!/usr/bin/env bash
# Peak resident memory of run, run --check, verify and gen on the course's largest inputs (t11, t22),
# against the input file's size. CPU only (the cpu variant), so it runs anywhere; prints a Markdown table.
# Usage: bash tools/lab/memory_table.sh [CASES...]   (default: t11 t22; needs ~3 GB of disk and a few minutes)
set -euo pipefail
cases=("${@:-t11 t22}")
[ $# -eq 0 ] && cases=(t11 t22)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ATTNBENCH_DATA="${ATTNBENCH_DATA:-$work/data}"
peak_mib() {  # peak RSS in MiB of a command (GNU time's "Maximum resident set size" is in KB)
    /usr/bin/time -v "$@" >"$work/out.txt" 2>"$work/time.txt" || { cat "$work/out.txt" "$work/time.txt" >&2; return 1; }
    awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$work/time.txt"
}
echo "| case | input file | gen (input + reference) | run | run --check | verify |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for case in "${cases[@]}"; do
    gen=$(peak_mib python3 -m attnbench gen "$case")
    input_mb=$(( $(stat -c %s "$ATTNBENCH_DATA/$case.in") / 1048576 ))
    run=$(peak_mib python3 -m attnbench run "$case" "$work/$case.out" --variant cpu --reps 1)
    check=$(peak_mib python3 -m attnbench run "$case" "$work/$case.out" --variant cpu --reps 1 --check)
    verify=$(peak_mib python3 -m attnbench verify "$work/$case.out" "$case")
    ratio() { awk -v a="$1" -v b="$input_mb" 'BEGIN {printf "%d MiB (%.2fx)", a, a / b}'; }
    echo "| $case | $input_mb MiB | $(ratio "$gen") | $(ratio "$run") | $(ratio "$check") | $(ratio "$verify") |"
    rm -f "$ATTNBENCH_DATA/$case.in" "$ATTNBENCH_DATA/$case.ref" "$work/$case.out"
done
