#!/usr/bin/env bash
# Mutation testing of the modules every result rests on, with mutmut 3 (pip install mutmut).
# Run it here, by hand, not in CI: it takes tens of minutes on two cores. docs/mutation.md has the
# last scores and explains each surviving mutant.
#
#   tools/mutation.sh                  # mutate MODULES, run TESTS against each mutant, print the score
#   JOBS=2 tools/mutation.sh           # more parallel workers (default 1: the machine is shared)
#   tools/mutation.sh --score          # only print the score of the last run
#
# The run happens in a scratch copy of the working tree (.mutation/, git-ignored), so the checkout
# is never touched. Afterwards: cd .mutation && mutmut results && mutmut show NAME (or mutmut browse).
set -euo pipefail

# ---- the one place to edit when modules or tests move -------------------------------------------
MODULES=(
    attnbench/cases/testcase.py      # the course format
    attnbench/cases/reference.py     # the float64 reference
    attnbench/bench/verify.py        # the verdict on an output
    attnbench/analysis/verdict.py    # SAME / FASTER / SLOWER
    attnbench/results/stats.py       # the samples' statistics
    attnbench/bench/sampler.py       # the sampler's stopping rules
    attnbench/cases/suite.py         # the suite generator
)
TESTS=(                      # fast CPU tests that check them (mutmut runs only those that reach a mutant)
    tests/cases/test_testcase.py
    tests/test_testcase_properties.py
    tests/cases/test_reference.py
    tests/bench/test_verify.py
    tests/analysis/test_verdict.py
    tests/analysis/test_self_comparison.py
    tests/bench/test_sampler.py
    tests/results/test_stats.py
    tests/cases/test_suite.py
)
SOURCE_ROOT=attnbench        # the package folder mutmut copies
ALSO_COPY=(testcases)      # data the tests read, besides tests/ (the scratch copy has no testcases/data)
# --------------------------------------------------------------------------------------------------

cd "$(dirname "$0")/.."
REPO=$PWD
WORK=${MUTATION_DIR:-$REPO/.mutation}
JOBS=${JOBS:-1}

toml_list() { local sep="" item; printf '['; for item in "$@"; do printf '%s"%s"' "$sep" "$item"; sep=", "; done; printf ']'; }

score() {
    (cd "$WORK" && mutmut results --all true) > "$WORK/results.txt"
    python3 - "$WORK/results.txt" "${MODULES[@]}" <<'PY'
import collections
import sys

results, modules = sys.argv[1], sys.argv[2:]
counts = collections.defaultdict(collections.Counter)
survivors = []
for line in open(results):
    name, _, status = line.strip().rpartition(": ")
    if not name:
        continue
    module = name.split(".x_")[0].split(".xǁ")[0]  # attnbench.verify.x_compare_outputs__mutmut_7
    counts[module][status] += 1
    if status not in ("killed", "timeout"):
        survivors.append(f"{status:10} {name}")
header = ("module", "mutants", "killed", "survived", "no tests", "score")
print("{:28} {:>8} {:>8} {:>9} {:>9} {:>7}".format(*header))
total = collections.Counter()


def row(label, c):
    n = sum(c.values())
    killed = c["killed"] + c["timeout"]
    score = f"{100 * killed / n:.1f}%" if n else "-"
    print(f"{label:28} {n:8} {killed:8} {c['survived']:9} {c['no tests']:9} {score:>7}")


for path in modules:
    c = counts.get(path[:-3].replace("/", "."), collections.Counter())
    total.update(c)
    row(path, c)
row("all", total)
if survivors:
    print("\nnot killed (docs/mutation.md says why; see one with: cd .mutation && mutmut show NAME):")
    print("\n".join(survivors))
PY
}

if [[ "${1:-}" == "--score" ]]; then
    score
    exit 0
fi

command -v mutmut >/dev/null || { echo "mutmut is not installed: pip install mutmut" >&2; exit 2; }

# A fresh scratch copy of the tracked and untracked-but-not-ignored files.
rm -rf "$WORK"
mkdir -p "$WORK"
git ls-files --cached --others --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$WORK"
# mutmut reads [tool.mutmut] from pyproject.toml before setup.cfg: the copy's config comes from the lists above.
python3 - "$WORK/pyproject.toml" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = re.sub(r"\n\[tool\.mutmut\].*?(?=\n\[|\Z)", "", text, flags=re.S)
open(path, "w").write(text)
PY
cat >> "$WORK/pyproject.toml" <<TOML

[tool.mutmut]
source_paths = ["$SOURCE_ROOT"]
only_mutate = $(toml_list "${MODULES[@]}")
also_copy = $(toml_list "${ALSO_COPY[@]}")
pytest_add_cli_args = ["-p", "no:cacheprovider"]
pytest_add_cli_args_test_selection = $(toml_list "${TESTS[@]}")
use_git_change_detection = false
TOML

cd "$WORK"
start=$(date +%s)
mutmut run --max-children "$JOBS" > mutmut-run.log 2>&1 || { tail -40 mutmut-run.log >&2; exit 1; }
echo "mutmut finished in $(( $(date +%s) - start )) s (log: $WORK/mutmut-run.log)"
cd "$REPO"
score
