"""Per-cell speeds of two trees from tools/lab/cost_ab.sh's compare logs, as a Markdown table on stdout.

Usage: python tools/lab/ab_cells.py NEW.log OLD.log [OLD2.log]. A cell's change is its new median against the
mean of the old runs' medians; it is flagged when beyond its band: the larger of the two old runs'
disagreement, twice the largest reported noise, and 2%.
"""

from __future__ import annotations

import re
import statistics
import sys

LINE = re.compile(r"(\S+) on (t\d+): ([\d.]+) ms ±([\d.]+)%")


def medians(path: str) -> dict[tuple[str, str], tuple[float, float]]:
    found = {}
    with open(path) as lines:
        for line in lines:
            match = LINE.match(line)
            if match:
                found[(match[1], match[2])] = (float(match[3]), float(match[4]) / 100)
    return found


def main(new_path: str, *old_paths: str) -> None:
    new, olds = medians(new_path), [medians(p) for p in old_paths]
    rows, changes, flagged = [], [], 0
    for cell, (median, noise) in new.items():
        old = [o[cell][0] for o in olds]
        spread = (max(old) - min(old)) / min(old)
        band = max(spread, 2 * max([noise] + [o[cell][1] for o in olds]), 0.02)
        change = median / statistics.mean(old) - 1
        changes.append(change)
        flag = abs(change) > band
        flagged += flag
        rows.append(f"| {cell[0]} | {cell[1]} | {' / '.join(f'{m:.4g}' for m in old)} | {median:.4g} | "
                    f"{100 * change:+.1f}% | ±{100 * band:.1f}% | {'OUTSIDE' if flag else 'within'} |")
    print(f"{len(rows)} cells; median change {100 * statistics.median(changes):+.2f}%, from "
          f"{100 * min(changes):+.1f}% to {100 * max(changes):+.1f}%; {flagged} outside their band\n")
    print("| variant | case | old medians (ms) | new median (ms) | change | band | |\n| --- | --- | ---: | ---: | ---: | ---: | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main(*sys.argv[1:])
