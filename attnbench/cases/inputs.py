"""Benchmark inputs: where run, compare and sweep get a testcase, its fingerprint and its reference.

Three kinds: a suite case (generated from its seed, on disk or in memory), a user's course file,
and a synthetic shape for sweeps (seeded with the suite's bit-exact generator). Each gives the same
things: a way to make it ready (generate a missing suite file), the testcase, the sha256 of its
bytes in the course format, and a reference output (float64 computed, stored as float32 like the
suite's references). `resolve` is the one rule that turns a user's CASE argument into an input.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from attnbench.cases import suite
from attnbench.cases.fresh_values import SUITE_RANGE, InputRange, file_range
from attnbench.cases.testcase import HEADER, OutputFile, Shape, Testcase, read_checked_shape, read_shape, read_testcase
from attnbench.errors import TestcaseError, UsageError
from attnbench.host_threads import host_threads

Advance = Callable[[int], None]
# A progress factory: (description, total units) -> context manager yielding an advance function.
ProgressFactory = Callable[[str, int], AbstractContextManager[Advance]]


def no_progress(description: str, total: int) -> AbstractContextManager[Advance]:
    return nullcontext(lambda n: None)


@dataclass(frozen=True)
class CaseInfo:
    """What saved results record about an input."""

    label: str
    shape: Shape
    input_sha256: str | None
    origin: str  # suite, file, synthetic
    provenance: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        data = asdict(self)
        data["shape"] = {"B": self.shape.B, "N": self.shape.N, "d": self.shape.d}
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "CaseInfo":
        shape = data["shape"]
        return cls(data["label"], Shape(shape["B"], shape["N"], shape["d"]), data.get("input_sha256"),
                   data.get("origin", ""), data.get("provenance", ""), data.get("note", ""))


def sha256_of_testcase(testcase: Testcase) -> str:
    """sha256 of the testcase in the course input format (header, then Q K V per item), from memory."""
    shape = testcase.shape
    digest = hashlib.sha256(HEADER.pack(shape.B, shape.N, shape.d))
    flat = np.ascontiguousarray(testcase.qkv, dtype="<f4").reshape(-1)
    digest.update(memoryview(flat).cast("B"))
    return digest.hexdigest()


def seeded_testcase(shape: Shape, seed: int, advance: Advance | None = None) -> Testcase:
    """The suite generator's values for `seed`, in memory: the bytes a suite file would hold."""
    flat = np.empty(3 * shape.elements, dtype="<f4")
    suite.fill_values(seed, flat, host_threads())
    if advance:
        advance(flat.size)
    return Testcase(flat.reshape(shape.B, 3, shape.N, shape.d))


def computed_reference(testcase: Testcase, label: str, progress: ProgressFactory, on_gpu: bool = False) -> np.ndarray:
    """The float64 reference, rounded to float32 as the suite stores references; `on_gpu`: on this machine's GPU
    where it has one (attnbench.cases.gpu_reference: for a caller that times nothing on the GPU meanwhile)."""
    from attnbench.cases.gpu_reference import float64_reference
    from attnbench.cases.reference import reference_output

    shape = testcase.shape
    with progress(f"float64 reference of {label}", shape.B * shape.N) as advance:
        return (float64_reference if on_gpu else reference_output)(testcase, advance, dtype=np.float32)


class BenchInput(Protocol):
    """One input of a compare or sweep."""

    label: str
    shape: Shape

    def prepare(self, progress: ProgressFactory = no_progress) -> None: ...

    def load(self, progress: ProgressFactory = no_progress) -> Testcase: ...

    def reference(self, testcase: Testcase, progress: ProgressFactory = no_progress) -> "np.ndarray | OutputFile": ...

    def info(self, testcase: Testcase) -> CaseInfo: ...

    def value_range(self, testcase: Testcase | None = None) -> InputRange:
        """Each of Q, K, V's range in this input, from the host (the fresh samples' distribution)."""
        ...


@dataclass
class SuiteInput:
    """A suite case. `in_memory`: generate a missing input in memory instead of writing its file.
    A reference computed here is stored beside the suite's others, so the next run reads it."""

    case: suite.SuiteCase
    in_memory: bool = False

    @property
    def label(self) -> str:
        return self.case.name

    @property
    def shape(self) -> Shape:
        return self.case.shape

    @property
    def path(self) -> Path:
        return suite.input_path(self.case)

    def prepare(self, progress: ProgressFactory = no_progress) -> None:
        """Generate the input file if it is missing (not for in-memory inputs)."""
        if self.in_memory or suite.is_generated(self.case):
            return
        with progress(f"generating {self.label}", 3 * self.shape.elements) as advance:
            suite.generate_input(self.case, advance)

    def load(self, progress: ProgressFactory = no_progress) -> Testcase:
        if suite.is_generated(self.case):
            return read_testcase(suite.input_path(self.case))
        if self.in_memory:
            with progress(f"generating {self.label}", 3 * self.shape.elements) as advance:
                return seeded_testcase(self.shape, self.case.seed, advance)
        self.prepare(progress)
        return read_testcase(suite.input_path(self.case))

    def reference(self, testcase: Testcase, progress: ProgressFactory = no_progress) -> "np.ndarray | OutputFile":
        """The stored reference (its bytes checked against their record first), read in chunks as it is
        compared; computed and stored (with its record) the first time."""
        stored = suite.stored_reference(self.case)
        if stored is not None:
            return OutputFile(stored, self.shape)
        out = computed_reference(testcase, self.label, progress)
        suite.store_reference(self.case, out)
        return out

    def value_range(self, testcase: Testcase | None = None) -> InputRange:
        return SUITE_RANGE  # generated uniform in [-3, 3): known without reading a byte

    def info(self, testcase: Testcase) -> CaseInfo:
        """What results record; the sha256 is computed here anyway, so a changed input is caught here."""
        found = sha256_of_testcase(testcase)
        if self.case.input_sha256 and found != self.case.input_sha256:
            raise TestcaseError(suite.input_mismatch(self.case, found))
        return CaseInfo(self.label, self.shape, found, "suite", self.case.provenance, self.case.note)


@dataclass
class FileInput:
    """A user's course input file; its reference is computed fresh."""

    path: Path

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def shape(self) -> Shape:
        return read_shape(self.path)

    def prepare(self, progress: ProgressFactory = no_progress) -> None:
        read_shape(self.path)  # a missing or unreadable file is reported before any work

    def load(self, progress: ProgressFactory = no_progress) -> Testcase:
        return read_testcase(self.path)

    def reference(self, testcase: Testcase, progress: ProgressFactory = no_progress) -> np.ndarray:
        return computed_reference(testcase, self.label, progress)

    def value_range(self, testcase: Testcase | None = None) -> InputRange:
        """The file's range; one holding NaN or Inf is refused here, naming the path given (the label is its
        name only: the error said "nan.in" for /tmp/cases/nan.in)."""
        if testcase is not None:
            found = InputRange.of(testcase.q, testcase.k, testcase.v)
        else:  # its size checked first: a truncated file was mapped past its end (a ValueError traceback in judge)
            found = file_range(self.path, read_checked_shape(self.path))
        found.require_finite(str(self.path))
        return found

    def info(self, testcase: Testcase) -> CaseInfo:
        return CaseInfo(self.label, testcase.shape, sha256_of_testcase(testcase), "file", "user file", str(self.path))


@dataclass
class SyntheticInput:
    """A sweep point: a shape with seeded inputs in the suite's value range, never written to disk."""

    shape: Shape
    seed: int
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            self.label = f"B{self.shape.B}_N{self.shape.N}_d{self.shape.d}"

    def prepare(self, progress: ProgressFactory = no_progress) -> None:
        pass

    def load(self, progress: ProgressFactory = no_progress) -> Testcase:
        with progress(f"generating {self.label}", 3 * self.shape.elements) as advance:
            return seeded_testcase(self.shape, self.seed, advance)

    def reference(self, testcase: Testcase, progress: ProgressFactory = no_progress) -> np.ndarray:
        return computed_reference(testcase, self.label, progress)

    def value_range(self, testcase: Testcase | None = None) -> InputRange:
        return SUITE_RANGE

    def info(self, testcase: Testcase) -> CaseInfo:
        return CaseInfo(self.label, self.shape, sha256_of_testcase(testcase), "synthetic", "sweep",
                        f"seed {self.seed}, values uniform in [-3, 3)")


_GROUP_WORDS = (*suite.GROUPS, "all", "known")
_INPUT_SUFFIXES = (".in", ".bin", ".dat")


def names_a_file(text: str) -> bool:
    """Written as a path: a folder separator, a leading dot, or a testcase file suffix."""
    return os.sep in text or text.startswith(".") or text.endswith(_INPUT_SUFFIXES)


def resolve(name_or_path: str) -> BenchInput:
    """One CASE argument as an input: a suite name, or the path of the user's own course file.

    A suite name wins over a local file of the same name; write it as a path (./t02) to use the file.
    A name that is neither is refused in one line.
    """
    if name_or_path in suite.SUITE and not names_a_file(name_or_path):
        return SuiteInput(suite.SUITE[name_or_path])
    path = Path(name_or_path)
    if path.exists() or names_a_file(name_or_path):
        if not path.exists():
            raise TestcaseError(f"{name_or_path}: no such file")
        return FileInput(path)
    suite.get_case(name_or_path)  # raises UnknownName with the hint
    raise AssertionError("unreachable")


def shadowed_by_suite(name: str) -> bool:
    """A suite name that is also a local file: resolve takes the suite case, and the user should know."""
    return name in suite.SUITE and not names_a_file(name) and Path(name).exists()


def inputs_for(selector: str | Sequence[str]) -> list[BenchInput]:
    """Inputs named by a case list (`suite.case_parts`): suite names, groups (`all`, `known`, `course`,
    ...), ranges (t01-t10) and files."""
    chosen: dict[str, tuple[BenchInput, str]] = {}  # label -> the input and the part that named it
    for part in suite.case_parts(selector):
        if part in _GROUP_WORDS and not names_a_file(part):
            items: list[BenchInput] = [SuiteInput(case) for case in suite.cases_in(part)]
        else:
            items = [resolve(part)]
        for item in items:
            held = chosen.get(item.label)
            if held is None:
                chosen[item.label] = (item, part)
            elif _identity(held[0]) != _identity(item):  # two inputs, one label: the second was dropped unsaid
                raise UsageError(f"{part}: its case name {item.label} is {held[1]}'s too; rename one of the files")
    return [item for item, _ in chosen.values()]


def _identity(item: BenchInput) -> object:
    """What makes two named inputs the same one (a case named twice, a file by two paths)."""
    if isinstance(item, FileInput):
        return item.path.resolve()
    return (type(item), item.label)


def bytes_to_write(inputs: Sequence[BenchInput]) -> int:
    """Bytes the suite inputs and float64 references not yet on disk will take once generated (each
    reference is stored beside its input the first time it is needed)."""
    total = 0
    for item in inputs:
        if isinstance(item, SuiteInput) and not item.in_memory:
            total += 0 if suite.is_generated(item.case) else item.shape.input_bytes
            total += 0 if suite.has_reference(item.case) else item.shape.output_bytes
    return total
