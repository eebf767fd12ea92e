"""Saved results: a versioned JSON schema for a compare or sweep, with its metadata, and file names.

A result set holds the run's metadata (device, software, git commit, date), the timing policy, what
each variant was (report, source hash, compiler options), what each input was (shape, sha256), and
one cell per (variant, input): its status, the check of its output, and its measurement with every
sample. `save` writes the JSON with its CSV and Markdown siblings; `load` reads any file of this
schema version or older and refuses newer ones in one sentence.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Iterable

from attnbench import strict_json
from attnbench.cases.inputs import CaseInfo
from attnbench.errors import NotResultsFile, ResultsError
from attnbench.results.measurement import Measurement
from attnbench.results.metadata import gpu_short_name
from attnbench.results.refusal import Refusal
from attnbench.results.run_settings import RunSettings
from attnbench.results.stats import KernelStats

SCHEMA = "attnbench-results"
# Schema history (bump SCHEMA_VERSION on any change a reader must know about; `loads` reads every
# older version and refuses newer ones):
#   1 (2026-11-21): kind compare / sweep; metadata, policy, settings, baseline, variants, cases, cells
#     (status ok / wrong / refused / error, check, measurement with every sample, extra).
#   2 (2026-11-22): kind judge (whole programs, wall time of the process); a measurement may carry
#     its verification; cells may record the GPU they ran on in extra["gpu"]. Version 1 files load
#     unchanged.
#   3 (2026-11-24): status impossible (a median below the physical floor of its shape on its device: no
#     speed); a measurement carries its floor ("floor", "impossible"), and its kernel statistics the SM
#     clock after each sample ("sm_clock_mhz", "sm_clock", "throttle_reasons", "clock_warning"); "ceiling"
#     may be a datasheet peak ("measured": false). Cells and measurements carry "timed_check", the
#     verified passes after the samples (their changed inputs, times, wall times and errors; the time
#     rule; a wall-clock disagreement); a wrong cell may be wrong because of them. A measurement whose
#     verified passes failed, or that is impossible, has "tflops" and "peak_fraction" null. Version 1 and
#     2 files load unchanged.
#   4 (2026-11-26): a refused cell carries its refusal as a record ("refusal": variant, kind, limit, value,
#     unit) beside its sentence in "message"; warnings (a measurement's and its kernel statistics') are records
#     ("kind", "text", "remedy") instead of sentences. Older files load: their refused cells have no record
#     (their message is shown whole), their warnings become the generic kind.
#   5 (2026-11-26): every timed sample on a fresh input, every output checked: "timed_check" records per cell
#     the launches checked ("samples"), how many on fresh inputs ("fresh_inputs"), the rows checked exactly
#     after each ("rows_per_sample"), the largest error seen, the failure (which launch, which rows, the worst
#     element), the wall-clock and determinism warnings; kernel statistics carry "fresh_inputs" (equal to
#     "count"). Status suspect (a median above the peak of the variant's declared unit); a measurement carries
#     its "unit" and "suspect". Older files load: their verified passes' record keeps only its verdict. Later in
#     version 5, a fourth launch after the samples and its failure kind "stale" (a reader without it names it
#     "launch N"); no field changed. Later still, "settings" is read into a record
#     (attnbench.results.run_settings.RunSettings) that writes the same keys: no field changed.
SCHEMA_VERSION = 5

# Cell statuses: ok (checked, then timed), wrong (failed its check: no speed), refused (the variant
# does not take the shape), error (compile, launch or memory failure), impossible (checked, but its
# median is below the physical floor: the timed passes cannot have done the work, so no speed).
OK, WRONG, REFUSED, ERROR, IMPOSSIBLE, SUSPECT = "ok", "wrong", "refused", "error", "impossible", "suspect"
STATUSES = (OK, WRONG, REFUSED, ERROR, IMPOSSIBLE, SUSPECT)
FAILED = (WRONG, ERROR, IMPOSSIBLE, SUSPECT)  # the statuses that make a run exit 1


class ResultKind(StrEnum):
    """What a result set is the run of; saved as its value ("kind": "compare")."""

    COMPARE = "compare"  # variants x cases
    SWEEP = "sweep"  # variants x a synthetic axis of shapes
    JUDGE = "judge"  # a whole program on the course's cases: process times, no kernel times


@dataclass(frozen=True)
class VariantInfo:
    """What a variant was when it was measured."""

    name: str
    report: str
    technique: str
    backend: str
    source: str | None = None
    source_hash: str | None = None
    nvcc_options: tuple[str, ...] = ()
    accuracy: str = "float32"
    arithmetic: str = ""  # of its products (Variant.arithmetic); empty in results saved before it was recorded

    def to_dict(self) -> dict:
        return {**asdict(self), "nvcc_options": list(self.nvcc_options)}

    @classmethod
    def from_dict(cls, data: dict) -> "VariantInfo":
        return cls(data["name"], data.get("report", ""), data.get("technique", ""), data.get("backend", "gpu"),
                   data.get("source"), data.get("source_hash"), tuple(data.get("nvcc_options", ())),
                   data.get("accuracy", "float32"), data.get("arithmetic", ""))


@dataclass
class Cell:
    """One variant on one input."""

    variant: str
    case: str
    status: str
    message: str = ""  # why it was refused, failed or wrong, in one line
    measurement: Measurement | None = None
    check: dict | None = None  # the metrics of the output's check
    extra: dict = field(default_factory=dict)  # compile-time defines, the lab's iteration count, ...
    timed_check: dict | None = None  # the check of every timed launch (a wrong cell has no measurement)
    refusal: Refusal | None = None  # why a refused cell was (None in files older than schema version 4)

    @classmethod
    def refused(cls, case: str, refusal: Refusal) -> Cell:
        """A refused cell: its refusal, and the refusal's sentence as its message."""
        return cls(refusal.variant, case, REFUSED, refusal.sentence(), refusal=refusal)

    @property
    def ok(self) -> bool:
        return self.status == OK and self.measurement is not None

    @property
    def stats(self) -> KernelStats | None:
        return self.measurement.kernel if self.measurement is not None else None

    def to_dict(self) -> dict:
        return {
            "variant": self.variant,
            "case": self.case,
            "status": self.status,
            "message": self.message,
            "check": self.check,
            "measurement": self.measurement.to_dict() if self.measurement is not None else None,
            "extra": self.extra,
            "timed_check": self.timed_check,
            "refusal": self.refusal.to_dict() if self.refusal is not None else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Cell":
        if data.get("status") not in STATUSES:
            raise ValueError(f"unknown cell status {data.get('status')!r}")
        for key in ("variant", "case", "message"):
            if not isinstance(data.get(key, ""), str):
                raise ValueError(f"the cell's {key} must be a string, not {type(data[key]).__name__}")
        measurement = Measurement.from_dict(data["measurement"]) if data.get("measurement") else None
        refusal = Refusal.from_dict(data["refusal"]) if data.get("refusal") else None
        return cls(data["variant"], data["case"], data["status"], data.get("message", ""), measurement,
                   _check_record(data, "check"), dict(data.get("extra") or {}), _check_record(data, "timed_check"),
                   refusal)


def _check_record(data: dict, key: str) -> dict | None:
    """A cell's check (or timed check) as saved: a table whose numbers are numbers. The renderers format its
    fields as they are, so a hand-damaged one is refused here, at load, with the key that is wrong."""
    record = data.get(key)
    if record is None:
        return None
    if not isinstance(record, dict):
        raise ValueError(f"the cell's {key} must be a table, not {type(record).__name__}")
    for name, value in record.items():
        if name in _CHECK_NUMBERS and value is not None and (isinstance(value, bool)
                                                             or not isinstance(value, (int, float))):
            raise ValueError(f"the cell's {key}.{name} must be a number, not {type(value).__name__}")
    return record


# the fields of a saved check that the tables and the CSV print as numbers
_CHECK_NUMBERS = frozenset({"atol", "rtol", "elements", "failing", "nan_count", "inf_count", "max_abs_error",
                            "max_rel_error", "rel_l2_error", "l1_error", "bound", "samples", "fresh_inputs",
                            "rows_per_sample", "rows", "wall_checked"})


@dataclass
class ResultSet:
    """A saved compare or sweep."""

    kind: ResultKind
    metadata: dict[str, Any]
    policy: dict[str, Any]
    variants: list[VariantInfo]
    cases: list[CaseInfo]
    cells: list[Cell]
    baseline: str | None = None
    settings: RunSettings = field(default_factory=RunSettings)  # the check, same_within, the sweep's axis, ...
    path: Path | None = None  # where it was saved or loaded from

    def __post_init__(self) -> None:
        self.kind = ResultKind(self.kind)  # a plain "compare" names the kind too; anything else is refused
        self.settings = RunSettings.of(self.settings)  # a settings dict (a run's record) becomes the record

    @property
    def name(self) -> str:
        return self.path.stem if self.path else f"unsaved {self.kind}"

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    @property
    def case_labels(self) -> list[str]:
        return [c.label for c in self.cases]

    def variant(self, name: str) -> VariantInfo | None:
        return next((v for v in self.variants if v.name == name), None)

    def case(self, label: str) -> CaseInfo | None:
        return next((c for c in self.cases if c.label == label), None)

    def cell(self, variant: str, case: str) -> Cell | None:
        return next((c for c in self.cells if c.variant == variant and c.case == case), None)

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "metadata": self.metadata,
            "policy": self.policy,
            "settings": self.settings.to_dict(),
            "baseline": self.baseline,
            "variants": [v.to_dict() for v in self.variants],
            "cases": [c.to_dict() for c in self.cases],
            "cells": [c.to_dict() for c in self.cells],
        }

    @classmethod
    def from_dict(cls, data: dict) -> "ResultSet":
        for key, kind in (("metadata", dict), ("policy", dict), ("settings", dict),
                          ("variants", list), ("cases", list), ("cells", list)):
            if data.get(key) is not None and not isinstance(data[key], kind):  # a reader walks each as its kind
                raise ValueError(f"{key} must be a {'record' if kind is dict else 'list'}, not {type(data[key]).__name__}")
        _check_gpu_facts((data.get("metadata") or {}).get("gpu"))
        result = cls(
            kind=ResultKind(data["kind"]),
            metadata=data.get("metadata") or {},
            policy=data.get("policy") or {},
            variants=[VariantInfo.from_dict(v) for v in data["variants"]],
            cases=[CaseInfo.from_dict(c) for c in data["cases"]],
            cells=[Cell.from_dict(c) for c in data["cells"]],
            baseline=data.get("baseline"),
            settings=RunSettings.from_dict(data.get("settings") or {}),
        )
        if result.kind is not ResultKind.JUDGE:  # a judge's cells have process times only
            for cell in result.cells:  # every reader of a compare's ok cell reads its kernel times
                if cell.status == OK and cell.measurement is None and "process_s" not in cell.extra:
                    raise ValueError(f"the cell ({cell.variant}, {cell.case}) is ok but has no measurement")
        return result


def _check_gpu_facts(gpu: object) -> None:
    """metadata.gpu is null (no GPU) or a record whose name is text: every reader (report, roof, the GPU check
    of --against) reads its name as such."""
    if gpu is None:
        return
    if not isinstance(gpu, dict):
        raise ValueError(f"metadata.gpu must be a record or null, not {type(gpu).__name__}")
    if gpu.get("name") is not None and not isinstance(gpu["name"], str):
        raise ValueError(f"metadata.gpu.name must be a string, not {type(gpu['name']).__name__}")


# An array of numbers as indent spreads it, one element a line (a raw newline never occurs inside a JSON string).
_SPREAD_NUMBER_ARRAY = re.compile(r"\[\n[-0-9.eE+,\s]*\]")


def dumps(result: ResultSet) -> str:
    """The JSON text of a result set (strict JSON: non-finite numbers become strings). Arrays of numbers
    (a cell's timing samples) stay on one line: one sample a line made a square-lab sweep 1.6x larger."""
    text = strict_json.dumps(result.to_dict())
    return _SPREAD_NUMBER_ARRAY.sub(lambda found: " ".join(found.group(0).split()), text)


def loads(text: str, source: str = "results") -> ResultSet:
    """Parse a result set, refusing other schemas and newer versions in one sentence."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotResultsFile(f"{source}: not a JSON file ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise NotResultsFile(f"{source}: not a results file (its JSON nests deeper than Python reads)") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise NotResultsFile(f"{source}: not a results file (a number of more digits than Python reads)") from None
    if isinstance(data, dict) and data.get("kind") == "scoreboard" and "schema" not in data:  # judge wrote it
        raise NotResultsFile(f"{source}: a class's scoreboard, not a run's results: its Markdown (and HTML) are "
                             "saved beside it, and `attnbench judge --history FOLDER` shows the class's runs")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise NotResultsFile(f"{source}: not an attnbench results file (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ResultsError(f"{source}: results schema version {version!r} is not a version number "
                           f"(1 to {SCHEMA_VERSION}): the file is damaged")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: results schema version {version} is newer than this attnbench reads ({SCHEMA_VERSION}); "
            "upgrade attnbench"
        )
    try:
        return ResultSet.from_dict(strict_json.restore(data))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # AttributeError: a list or text where a record is
        raise ResultsError(f"{source}: malformed results file ({type(exc).__name__}: {exc})") from None


def load(path: str | Path) -> ResultSet:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")  # JSON is UTF-8 (RFC 8259), whatever the locale
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file") from None
    except IsADirectoryError:  # the command line's FILE option says so first; load_results from Python did not
        raise ResultsError(f"{path}: is a folder, not a results file") from None
    except UnicodeDecodeError:
        raise NotResultsFile(f"{path}: not a JSON file (it is not text)") from None
    result = loads(text, str(path))
    result.path = path
    return result


def slug(text: str, limit: int = 48) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._+-]+", "-", text).strip("-.")
    return cleaned[:limit].rstrip("-.") or "run"


def default_name(result: ResultSet, selector: str | None = None) -> str:
    """A readable file stem: 2026-11-21_compare_h200_t10-t30."""
    date = str(result.metadata.get("date") or "")[:10] or "undated"
    labels = result.case_labels
    if selector and "," not in selector and "/" not in selector:
        what = selector
    elif len(labels) <= 2:
        what = "+".join(labels)
    else:
        what = f"{labels[0]}-{labels[-1]}"
    return "_".join((date, result.kind, gpu_short_name(result.metadata), slug(what)))


def unique_stem(folder: Path, stem: str, suffixes: Iterable[str] = (".json",)) -> str:
    """`stem`, or stem_2, stem_3, ... so that no existing result is overwritten."""
    candidate, n = stem, 1
    while any((folder / f"{candidate}{s}").exists() for s in suffixes):
        n += 1
        candidate = f"{stem}_{n}"
    return candidate
