"""The built-in suite: named testcases generated on demand from recorded seeds.

`testcases/suite.json` records each case's shape, seed, provenance (known course shape, filled in,
or a report's workload) and the sha256 of its input. Inputs are generated from the seed with a
bit-exact recipe (PCG64 raw 64-bit words, top 24 bits scaled to [-3, 3)), so the bytes are the same on
every run and machine. References are computed in float64 and stored in the course output format,
each with the sha256 of its bytes beside it (`t02.ref.sha256`, as `sha256sum` writes it). That record
is made where the reference is computed, not shipped in suite.json: a float64 result rounded to float32
may differ in its last bit between BLAS builds, and the large cases take hours to compute. A reference
whose bytes no longer match its record is refused before any check, so a changed file can never pass
a wrong kernel.

Each course case (t01-t30) also records the seconds its whole program is allowed (`time_limit_s`), and the
manifest names the GPU those limits were set for (`time_limits_set_for`): the judge reads them from here.
Manifest history: 1, the cases; 2, the course's time limits (read as absent from a version 1 manifest); 3, the
course's real shapes: B of t12-t21 and t23-t27 as the 2024 course published them (versions 1 and 2 had filled
them in), so a saved result's cells of those cases are never compared with a version 3 run's (their shapes
differ: `analysis.against`).
"""

from __future__ import annotations

import difflib
import fcntl
import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence

import numpy as np

from attnbench import locations
from attnbench.cases.testcase import HEADER, Shape, read_testcase, write_output
from attnbench.errors import OutputError, SuiteManifestDamaged, TestcaseError, UnknownName
from attnbench.files import atomic_write
from attnbench.printable import printable

_GEN_CHUNK = 1 << 22  # values generated per step
_VALUE_BITS = 24

Progress = Callable[[int], None]


@dataclass(frozen=True)
class SuiteCase:
    """A named built-in testcase."""

    name: str
    shape: Shape
    seed: int
    group: str  # course, square, largehead, singlehead, odd
    provenance: str  # known, partly known, filled, workload, test
    note: str
    input_sha256: str | None
    time_limit_s: float | None = None  # the course's limit for its whole program (t01-t30), on a GTX 1080

    @property
    def known(self) -> bool:
        return self.provenance == "known"


def data_dir() -> Path:
    """Where generated inputs and references live (see attnbench.locations.data_dir)."""
    return locations.data_dir()


def input_path(case: SuiteCase) -> Path:
    return data_dir() / f"{case.name}.in"


def reference_path(case: SuiteCase) -> Path:
    return data_dir() / f"{case.name}.ref"


def reference_record_path(case: SuiteCase) -> Path:
    """The sha256 of the stored reference, recorded when it was computed."""
    return data_dir() / f"{case.name}.ref.sha256"


def suite_file_at(path: str | os.PathLike) -> Path | None:
    """The suite file (a case's input, reference or reference record) that writing `path` would replace,
    or None. Links and `..` are seen through: the resolved path, and for an existing file its
    (device, inode), are compared with every suite file's."""
    target = Path(os.path.realpath(path))
    folder = Path(os.path.realpath(data_dir()))
    names = [p.name for case in SUITE.values()
             for p in (input_path(case), reference_path(case), reference_record_path(case))]
    if target.parent == folder and target.name in names:
        return folder / target.name
    try:
        found = os.stat(target)
    except OSError:
        return None
    for name in names:
        try:
            suite_file = os.stat(folder / name)
        except OSError:
            continue
        if (suite_file.st_dev, suite_file.st_ino) == (found.st_dev, found.st_ino):
            return folder / name
    return None


def refuse_suite_file(given: str | os.PathLike, what: str = "the output") -> None:
    """Refuse, before any work, to write over a suite file (they are every check's ground truth) or a file
    attnbench ships or reads (its manifest, kernels and modules, the launch facts' attnbench.toml or
    pyproject.toml: writing there breaks every later command)."""
    def named(found: Path) -> str:  # the file it resolves to, when the path given does not say it already
        return "" if os.fsdecode(given) == str(found) else f" ({found})"

    shipped = locations.shipped_file_at(given)
    if shipped is not None:
        raise OutputError(f"{os.fsdecode(given)}: a file attnbench reads{named(shipped)}; {what} may not replace "
                          "it (give another path)")
    launch_facts = locations.launch_facts_file_at(given)
    if launch_facts is not None:
        raise OutputError(f"{os.fsdecode(given)}: a file attnbench reads for your kernels' launch facts"
                          f"{named(launch_facts)}; {what} may not replace it (give another path)")
    suite_file = suite_file_at(given)
    if suite_file is not None:
        raise OutputError(f"{os.fsdecode(given)}: a suite file{named(suite_file)}; {what} may not replace "
                          "a suite input or reference (give another path)")


def _damaged(why: str) -> SuiteManifestDamaged:
    return SuiteManifestDamaged(f"{locations.suite_manifest()}: {why}; the suite's manifest is damaged: restore it "
                                "(`git checkout testcases/suite.json` in a checkout, or reinstall attnbench)")


def _read_manifest() -> dict:
    try:
        raw = json.loads(locations.suite_manifest().read_text(encoding="utf-8"))
    except PermissionError as exc:  # not damaged: this user may not read it ("damaged: restore it" misled)
        raise SuiteManifestDamaged(f"{locations.suite_manifest()}: cannot be read ({exc.strerror}); the suite's "
                                   "manifest must be readable by the user running attnbench") from None
    except OSError as exc:
        raise _damaged(exc.strerror or str(exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise _damaged(f"not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise _damaged("not a JSON object")
    return raw


def _load_suite(raw: dict | None = None) -> dict[str, SuiteCase]:
    raw = raw if raw is not None else _read_manifest()
    try:
        return _cases_of(raw)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _damaged(f"a case record is not as written ({type(exc).__name__}: {exc})") from None


def _cases_of(raw: dict) -> dict[str, SuiteCase]:
    cases = {}
    for c in raw["cases"]:
        cases[c["name"]] = SuiteCase(
            name=c["name"],
            shape=Shape(c["B"], c["N"], c["d"]),
            seed=c["seed"],
            group=c["group"],
            provenance=c["provenance"],
            note=c.get("note", ""),
            input_sha256=c.get("input_sha256"),
            time_limit_s=float(c["time_limit_s"]) if "time_limit_s" in c else None,
        )
    return cases


_MANIFEST = _read_manifest()
SUITE: dict[str, SuiteCase] = _load_suite(_MANIFEST)
TIME_LIMITS_SET_FOR: str = _MANIFEST.get("time_limits_set_for", "")  # the GPU the course's limits belong to
SUITE_VERSION: int = int(_MANIFEST.get("version", 1))
GROUPS = ("course", "known", "square", "largehead", "singlehead", "odd")


def get_case(name: str, files_too: bool = True) -> SuiteCase:
    """The suite case of that name; an unknown one is refused with the names close to it. `files_too`: the
    command would also take a file of that name (run, compare), so the refusal says neither is there."""
    try:
        return SUITE[name]
    except KeyError:
        close = difflib.get_close_matches(name, [*SUITE, *GROUPS, "all", "known"], n=3, cutoff=0.6)
        padded = re.sub(r"^([A-Za-z_]+)(\d)$", r"\g<1>0\2", name)  # `t1` is t01, which difflib ranks below t21
        if padded != name and padded in SUITE:
            close = [padded, *(c for c in close if c != padded)][:3]
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        what = "neither a file nor a suite case" if files_too else "not a suite case"
        raise UnknownName(f"{name!r} is {what}{hint} (see `attnbench cases`)") from None


_RANGE = re.compile(r"([A-Za-z_]+)(\d+)-(?:([A-Za-z_]+))?(\d+)")


def _expand_range(part: str) -> list[str]:
    """`t01-t30` (or `t01-30`) as the suite names it spans; any other part as it is."""
    match = _RANGE.fullmatch(part)
    if match is None or Path(part).exists():  # a file named like a range is the file
        return [part]
    prefix, first, second_prefix, last = match.groups()
    if second_prefix not in (None, prefix):
        raise UnknownName(f"{part}: a range names one series, like t01-t30")
    names = [f"{prefix}{i:0{len(first)}d}" for i in range(int(first), int(last) + 1)]
    if not names:
        raise UnknownName(f"{part}: an empty range")
    missing = [n for n in names if n not in SUITE]
    if missing:
        raise UnknownName(f"{part}: {missing[0]} is not a suite case (see `attnbench cases`)")
    return names


def case_parts(selector: str | Sequence[str]) -> list[str]:
    """The one parser of case lists, for every command and the Python API: a comma list (or a sequence
    of them) of names, groups, ranges (t01-t10) and files, ranges expanded, blanks dropped."""
    texts = [selector] if isinstance(selector, str) else list(selector)
    parts = [p.strip() for text in texts for p in str(text).split(",") if p.strip()]
    if not parts:  # `--cases ,` would otherwise be an empty run that exits 0
        raise UnknownName(f"{','.join(map(str, texts))!r} names no case: give case names, groups or ranges "
                          "(see `attnbench cases`)")
    return [name for part in parts for name in _expand_range(part)]


def cases_in(selector: str | Sequence[str]) -> list[SuiteCase]:
    """Suite cases named by a case list of names, groups (`all`, `course`, `known`, `square`, ...) and
    ranges (t01-t10)."""
    chosen: list[SuiteCase] = []
    for part in case_parts(selector):
        if part == "all":
            group = list(SUITE.values())
        elif part == "known":
            group = [c for c in SUITE.values() if c.known]
        elif part in GROUPS:
            group = [c for c in SUITE.values() if c.group == part]
        elif part not in SUITE and Path(part).exists():  # `gen good.in`: a file, where only the suite's cases go
            what = "a folder" if Path(part).is_dir() else "a file"
            raise UnknownName(f"{part}: {what}, but this takes the suite's cases only (names, groups, ranges such as "
                              "t01-t10; see `attnbench cases`); run, verify, compare and judge take an input file")
        else:
            group = [get_case(part, files_too=False)]
        chosen.extend(c for c in group if c not in chosen)
    return chosen


def input_values(seed: int, count: int) -> Iterator[np.ndarray]:
    """The case's float32 values in file order, in chunks; bit-exact on any machine."""
    bits = np.random.PCG64(seed)
    done = 0
    while done < count:
        n = min(_GEN_CHUNK, count - done)
        yield _values(bits.random_raw(n))
        done += n


def fill_values(seed: int, out: np.ndarray, threads: int = 1) -> None:
    """`out` (float32, flat) filled with the first out.size values of `seed`, the bits `input_values` gives, by up
    to `threads` threads at once: each chunk's generator is the seed's advanced to the chunk's first value (PCG64
    steps once per raw value, and jumps ahead in O(log n)), and numpy's generator and arithmetic run without the
    GIL. A class draws every input anew each round: 6.5 GB for t01-t30, about 9 s a round on one core."""
    starts = range(0, out.size, _GEN_CHUNK)

    def fill(start: int) -> None:
        bits = np.random.PCG64(seed)
        bits.advance(start)
        end = min(start + _GEN_CHUNK, out.size)
        out[start:end] = _values(bits.random_raw(end - start))

    if threads <= 1 or len(starts) <= 1:
        for start in starts:
            fill(start)
        return
    with ThreadPoolExecutor(min(threads, len(starts))) as pool:
        for done in pool.map(fill, starts):  # in order; an error raised here
            pass


def _values(top: np.ndarray) -> np.ndarray:
    """Raw 64-bit draws as values uniform in [-3, 3): their top 24 bits t as 6 t / 2^24 - 3, rounded once."""
    top >>= np.uint64(64 - _VALUE_BITS)
    # top * 6 / 2^24 - 3, rounded once to float32, computed as the whole number 6 * top - 3 * 2^24 rounded
    # to float32 and scaled by 2^-24 (exact): the same bits as float64 arithmetic rounded (every top is
    # checked in tests/cases/test_suite.py) in half the passes over memory (a class draws every input anew)
    whole = top.view(np.int64)
    whole *= 6
    whole -= 3 << _VALUE_BITS
    values = whole.astype("<f4")
    values *= np.float32(2.0**-_VALUE_BITS)
    return values


def write_input(case: SuiteCase, f: BinaryIO, progress: Progress | None = None) -> str:
    """Stream the case's input to `f`; returns its sha256."""
    digest = hashlib.sha256()
    header = HEADER.pack(case.shape.B, case.shape.N, case.shape.d)
    f.write(header)
    digest.update(header)
    for chunk in input_values(case.seed, 3 * case.shape.elements):
        data = chunk.tobytes()
        f.write(data)
        digest.update(data)
        if progress:
            progress(chunk.size)
    return digest.hexdigest()


class _HashOnly:
    """A write-only sink, for hashing a case without touching the disk."""

    def write(self, data: bytes) -> int:
        return len(data)


def input_sha256(case: SuiteCase) -> str:
    return write_input(case, _HashOnly())  # type: ignore[arg-type]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def _case_lock(case: SuiteCase) -> Iterator[None]:
    """One process at a time makes a case's files; another waits, then finds them made. The lock file
    is removed when done, so none is left behind; a waiter that wakes holding a removed file's lock
    opens the new one instead (the inode check), so two processes never hold the case at once."""
    folder = data_dir()
    path = folder / f".{case.name}.lock"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a")
    except OSError as exc:  # named as the user set it (ATTNBENCH_DATA), not the lock file inside it
        why = exc.strerror or str(exc)
        if folder.is_symlink() and not folder.exists():  # mkdir says "File exists" of a link to nothing
            why = f"a symbolic link to {os.readlink(folder)!r}, which does not exist"
        elif folder.exists() and not folder.is_dir():
            why = "not a folder"
        raise OutputError(f"{folder}: the suite's generated files cannot be written there ({printable(why)}); "
                          f"set {locations.DATA_ENV} to a writable folder") from None
    while True:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()
        handle = open(path, "a")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # before the unlock: a waiter then sees its file is gone
        handle.close()


def check_input_bytes(case: SuiteCase) -> None:
    """Refuse a generated input whose bytes are not those the suite records (changed in place, same size)."""
    path = input_path(case)
    if case.input_sha256 and is_generated(case):
        found = sha256_file(path)
        if found != case.input_sha256:
            raise TestcaseError(input_mismatch(case, found))


def input_mismatch(case: SuiteCase, found: str) -> str:
    """The sentence for a suite input whose bytes changed since generation."""
    return (f"{input_path(case)}: its bytes are not those recorded for {case.name} (sha256 {found[:16]}..., "
            f"recorded {str(case.input_sha256)[:16]}...); it was changed after generation, or is another file of "
            f"that name: {_REPLACE_ADVICE.format(name=case.name)}")


_REPLACE_ADVICE = "move it away if it is yours, or `attnbench gen {name} --force` replaces it with the suite's"


_PREFIX_VALUES = 4096  # values compared to tell the suite's own earlier file from a user's


def _generated_for_another_shape(case: SuiteCase) -> bool:
    """Whether the file at the case's input path is one attnbench generated for this case under another shape
    (the suite's version 2 had other B for t12-t21 and t23-t27): its N and d are the case's, and its first
    values are those the case's seed draws, which no user's file holds by chance."""
    try:
        with open(input_path(case), "rb") as f:
            header = f.read(HEADER.size)
            head = np.frombuffer(f.read(4 * _PREFIX_VALUES), "<f4")
    except OSError:
        return False
    if len(header) != HEADER.size:
        return False
    B, N, d = HEADER.unpack(header)
    if (N, d) != (case.shape.N, case.shape.d) or B <= 0 or head.size == 0:
        return False
    expected = next(input_values(case.seed, min(head.size, 3 * case.shape.elements)))[: head.size]
    return head.size == expected.size and bool(np.array_equal(head, expected))


def refuse_foreign_input(case: SuiteCase) -> None:
    """Refuse a file of another size at the case's input path: attnbench did not write it, and never replaces a
    user's file unasked (one of the right size with other bytes is `check_input_bytes`'s)."""
    path = input_path(case)
    if path.exists() and not is_generated(case) and not _generated_for_another_shape(case):
        size = path.stat().st_size
        raise TestcaseError(f"{path}: {size} bytes, not the {case.shape.input_bytes} of the suite's {case.name}: "
                            f"attnbench did not write it; {_REPLACE_ADVICE.format(name=case.name)}")


def generate_input(case: SuiteCase, progress: Progress | None = None, force: bool = False) -> Path:
    """Write the case's input file (atomically) and check its sha256 against the suite's record."""
    path = input_path(case)
    with _case_lock(case):
        if not force and is_generated(case):  # made by another process while this one waited
            return path
        if not force:
            refuse_foreign_input(case)
        sha: list[str] = []
        atomic_write(path, lambda f: sha.append(write_input(case, f, progress)))
        if case.input_sha256 and sha[0] != case.input_sha256:
            path.unlink(missing_ok=True)
            raise TestcaseError(
                f"{case.name}: generated input has sha256 {sha[0]}, but the suite records {case.input_sha256}; "
                "the generator is not reproducing the recorded bytes"
            )
    return path


def generate_reference(case: SuiteCase, progress: Progress | None = None, force: bool = False) -> Path:
    """Compute the float64 reference of a generated input and store it (float32) in the output format,
    with the sha256 of its bytes beside it. A stored reference whose bytes changed is computed again. On the
    GPU where there is one (t21-t30 take minutes on a CPU)."""
    from attnbench.cases.gpu_reference import float64_reference

    path = reference_path(case)
    with _case_lock(case):
        if not force and reference_state(case) == "ok":
            return path
        _store_reference(case, float64_reference(read_testcase(input_path(case)), progress, dtype=np.float32))
    return path


def store_reference(case: SuiteCase, out: np.ndarray) -> None:
    """Store a reference computed from the case's own input (float32), with its sha256 record."""
    with _case_lock(case):
        _store_reference(case, out)


def _store_reference(case: SuiteCase, out: np.ndarray) -> None:
    path = reference_path(case)
    # the record goes first: a reference without one is never trusted (a Ctrl-C between is harmless)
    reference_record_path(case).unlink(missing_ok=True)
    write_output(path, out)
    record = f"{sha256_file(path)}  {path.name}\n"
    atomic_write(reference_record_path(case), lambda f: f.write(record.encode()))
    _TRUSTED.clear()


def is_generated(case: SuiteCase) -> bool:
    path = input_path(case)
    return path.exists() and path.stat().st_size == case.shape.input_bytes


def has_reference(case: SuiteCase) -> bool:
    """A stored reference of the right size with its sha256 recorded (its bytes are checked on use)."""
    path = reference_path(case)
    return path.exists() and path.stat().st_size == case.shape.output_bytes and reference_record_path(case).is_file()


def _recorded_reference_sha256(case: SuiteCase) -> str:
    try:
        words = reference_record_path(case).read_text(errors="replace").split()
    except OSError:
        return ""
    return words[0] if words else ""


# Hashes already checked in this process, by the reference's (device, inode, size, mtime) and its
# record: a compare reads the same reference once per variant, and a large one takes a second to hash.
_TRUSTED: set[tuple] = set()


def reference_state(case: SuiteCase) -> str:
    """`missing` (none, the wrong size, or no record: it is computed), `ok`, or `changed` (its bytes are
    not those recorded when it was computed)."""
    if not has_reference(case):
        return "missing"
    path = reference_path(case)
    found = os.stat(path)
    recorded = _recorded_reference_sha256(case)
    key = (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, recorded)
    if key in _TRUSTED:
        return "ok"
    if sha256_file(path) != recorded:
        return "changed"
    _TRUSTED.add(key)
    return "ok"


def reference_mismatch(case: SuiteCase) -> str:
    """The sentence for a stored reference whose bytes changed since it was computed."""
    return (f"{reference_path(case)}: its bytes are not those recorded when the float64 reference of "
            f"{case.name} was computed (something wrote over it); regenerate it with `attnbench gen {case.name}`")


def stored_reference(case: SuiteCase) -> Path | None:
    """The stored reference to check against, its bytes checked first; None when there is none yet.
    A changed one is refused (TestcaseError), never used."""
    state = reference_state(case)
    if state == "changed":
        raise TestcaseError(reference_mismatch(case))
    return reference_path(case) if state == "ok" else None
