"""A profile saved (`attnbench profile --save`): its JSON, its Markdown tables and each variant's raw ncu CSV."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnbench import strict_json
from attnbench.explain.profile import VariantProfile
from attnbench.files import write_text
from attnbench.output.render.markdown import render
from attnbench.output.tables.table_model import TableModel
from attnbench.results.metadata import gpu_short_name


def profile_stem(metadata: dict[str, Any], case: str, variants: Sequence[str]) -> str:
    """A saved profile's file stem: date_gpu_profile_case_variants."""
    return f"{_dt.date.today().isoformat()}_{gpu_short_name(metadata)}_profile_{case}_{'-'.join(variants)}"


def save_profile(document: dict, profiles: list[VariantProfile], tables: list[TableModel], title: str,
                 folder: Path, stem: str) -> list[Path]:
    """The profile's JSON, its Markdown tables and each variant's raw ncu CSV, beside each other."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for index, p in enumerate(profiles):
        csv_path = folder / f"{stem}_{p.variant}.ncu.csv"
        write_text(csv_path, p.csv_text)
        document["variants"][index]["csv"] = csv_path.name
        written.append(csv_path)
    write_text(folder / f"{stem}.json", strict_json.dumps(document))
    write_text(folder / f"{stem}.md", f"# {title}\n\n" + "\n\n".join(render(t, level=3) for t in tables) + "\n")
    return [folder / f"{stem}.json", folder / f"{stem}.md", *written]
