"""User variants: kernels kept in the user's own folder, with their launch facts in attnbench.toml.

attnbench looks for launch facts in the working directory and each parent in turn: the first
folder with an `attnbench.toml`, or a `pyproject.toml` holding a `[tool.attnbench]` table, is the
one used. Each variant is one table under `variants`:

    [variants.mine]
    source = "mine.cu"              # relative to the TOML file
    layout = "separate"             # q, k, v, o pointers (default); "qkv" for the built-ins' interleaved ABI
    technique = "one thread per query row, online softmax"
    head_dims = [32, 64]            # or min_head_dim / max_head_dim; max_seq_len = 32768
    seq_len_multiple = 128          # refuse N that is not a multiple of 128 (a kernel without masks)
    defines = { HEAD_DIM = "d" }    # -DHEAD_DIM=<d> when compiling, from the whole testcase's shape
    steps = "1"                     # host-loop passes over the launches (the int argument `step`)
    options = ["--use_fast_math"]   # extra nvcc options, from an allow-list (kernels.nvcc_options)
    arch = "sm_90a"                 # build for this architecture only, and run only on its GPUs (Hopper's wgmma)
    unit = "ffma"                   # what it runs on: its peak is the one a speed above makes the cell SUSPECT
                                    # ("ffma" default, "tf32x3", "wgmma3x", "tensor", ...; a compute unit)
    workspaces = { row_max = "4 * B * N" }   # bytes per chunk of B batch items

    [[variants.mine.kernels]]       # one table per kernel, in launch order
    name = "mine_attention"
    grid = ["cdiv(N, 64)", "B", 1]
    block = [64, 1, 1]
    smem = "0"
    args = ["q", "k", "v", "o", "N", "d", "scale"]

    [variants.mine.flavours.fastmath]   # optional named builds: --variants mine:fastmath
    description = "built with --use_fast_math"
    options = ["--use_fast_math"]   # also defines = { NAME = 1 } and seq_len_multiple

Every number may be a formula of B, N and d (see attnbench.kernels.expressions). A kernel path
given on the command line (`--variant path/to/mine.cu`) is looked up in the TOML found from the
kernel's own folder upwards: the variant whose `source` is that file. Anything wrong in a table is
one line naming the file and the key.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from attnbench.cases.testcase import Shape
from attnbench import locations
from attnbench.errors import AttnbenchError, OutputError
from attnbench.kernels.builtin_variants import REGISTRY
from attnbench.kernels.expressions import Expression, ExpressionError, parse_expression
from attnbench.kernels.nvcc_options import option_problem, path_problem
from attnbench.kernels.variant import SCALAR_ARGS, Constraints, Flavour, Launch, Variant
from attnbench.results.compute_units import COMPUTE_UNITS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_FILE = locations.LAUNCH_FACTS_FILES[0]
VARIANT_GROUPS = ("all", "ladder")  # names --variants reads as groups (catalogue.variants_for), never as a variant
LAYOUT_POINTERS = {"separate": ("q", "k", "v", "o", "out"), "qkv": ("qkv", "out", "o")}
_VARIANT_KEYS = {"source", "layout", "technique", "report", "kernels", "defines", "head_dims", "min_head_dim",
                 "max_head_dim", "max_seq_len", "seq_len_multiple", "workspaces", "steps", "options",
                 "flavours", "arch", "unit"}
_FLAVOUR_KEYS = {"description", "defines", "options", "seq_len_multiple"}
_KERNEL_KEYS = {"name", "grid", "block", "smem", "args"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIANT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_ARCH = re.compile(r"sm_[1-9][0-9]a?")
# A user variant declares a compute unit only. An attention pass does O(N^2 d) arithmetic on O(N d) data, so no
# author's kernel is memory-bound, and "memory" would exempt its speed from SUSPECT (a bandwidth is no FLOP peak).
USER_UNITS = tuple(name for name, unit in COMPUTE_UNITS.items() if not unit.moves_bytes)
_MEMORY_UNIT = ("; an attention pass does O(N^2 d) arithmetic on O(N d) data, so declare the compute unit it "
                "runs on, whose peak its speed is held to")


class UserVariantError(AttnbenchError):
    """A user's launch facts cannot be used: one line naming the file and the key."""

    exit_code = 2


def read_toml(path: Path, error: type[AttnbenchError] = UserVariantError) -> dict[str, Any]:
    """A TOML file as a dict; a missing or malformed file is one line naming it."""
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None
    except UnicodeDecodeError:  # tomllib decodes the whole file first: a traceback from every command
        raise error(f"{path}: not valid TOML (it is not UTF-8 text)") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None


@dataclass(frozen=True)
class LaunchFacts:
    """The file the launch facts came from, and its table of variants."""

    path: Path
    variants: dict[str, Any]
    prefix: str  # how keys are named in messages: "variants" or "tool.attnbench.variants"


def find_launch_facts(start: Path | None = None) -> LaunchFacts | None:
    """The first attnbench.toml, or pyproject.toml with [tool.attnbench], from `start` up to the root."""
    start = (start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        config = folder / CONFIG_FILE
        if config.is_file():
            return _facts(config, read_toml(config), "variants")
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            tool = read_toml(pyproject).get("tool", {})
            if isinstance(tool, dict) and "attnbench" in tool:
                return _facts(pyproject, tool["attnbench"], "tool.attnbench.variants")
    return None


def refuse_kernel_source(given: str | os.PathLike, what: str = "the output") -> None:
    """Refuse, before any work, to write over a kernel source your launch facts name (found from the working
    folder up): an output written there destroyed your kernel, whichever variant the run was of."""
    try:
        facts = find_launch_facts()
    except (UserVariantError, OSError):  # a damaged file: the command that reads its variants says so
        return
    if facts is None:
        return
    target = Path(os.path.realpath(given))
    for table in facts.variants.values():
        source = table.get("source") if isinstance(table, dict) else None
        if isinstance(source, str) and source and target == Path(os.path.realpath(facts.path.parent / source)):
            raise OutputError(f"{os.fsdecode(given)}: a kernel source your launch facts name ({facts.path}); "
                              f"{what} may not replace it (give another path)")


def _facts(path: Path, table: Any, prefix: str) -> LaunchFacts:
    where = prefix.rsplit(".variants", 1)[0] if prefix != "variants" else ""
    if not isinstance(table, dict):
        raise UserVariantError(f"{path}: {where or 'the file'} must be a table")
    unknown = set(table) - {"variants"}
    if unknown:
        key = f"{where}.{sorted(unknown)[0]}" if where else sorted(unknown)[0]
        raise UserVariantError(f"{path}: {key}: unknown key (launch facts go under [{prefix}.NAME])")
    variants = table.get("variants", {})
    if not isinstance(variants, dict):
        raise UserVariantError(f"{path}: {prefix}: must be a table of variants, one [{prefix}.NAME] each")
    # One rule wherever the file is read: a table taking a built-in's name is refused, whichever variant the
    # command uses (it once refused only a run of that very name, and ran every other beside the file's claim)
    shadowing = [name for name in variants if name in REGISTRY]
    if shadowing:
        name = shadowing[0]
        raise UserVariantError(f"{path}: {prefix}.{name}: {name} is a built-in variant; choose another name")
    grouped = [name for name in variants if name in VARIANT_GROUPS]
    if grouped:  # `--variants all` ran every built-in, and a variant of that name never ran
        name = grouped[0]
        raise UserVariantError(f"{path}: {prefix}.{name}: {name} names a group of variants (--variants {name}); "
                               "choose another name")
    return LaunchFacts(path.resolve(), variants, prefix)


# -- one variant table ------------------------------------------------------------------------------
class _Reader:
    """Reads one variant table, naming `file: key` in every error."""

    def __init__(self, facts: LaunchFacts, name: str) -> None:
        self.facts = facts
        self.name = name
        self.key = f"{facts.prefix}.{name}"

    def fail(self, key: str, message: str) -> UserVariantError:
        return UserVariantError(f"{self.facts.path}: {self.key}{key}: {message}")

    def expression(self, value: Any, key: str) -> Expression:
        try:
            return parse_expression(value)
        except ExpressionError as exc:
            raise self.fail(key, str(exc)) from None

    def shape_function(self, value: Any, key: str, minimum: int) -> Callable[[Shape], int]:
        """A formula as a function of the shape, refusing values below `minimum` when evaluated."""
        expression = self.expression(value, key)
        where = f"{self.facts.path}: {self.key}{key}"

        def evaluate(shape: Shape) -> int:
            try:
                result = expression(shape.B, shape.N, shape.d)
            except ExpressionError as exc:
                raise UserVariantError(f"{where}: {exc} for {shape}") from None
            if result < minimum:
                raise UserVariantError(f"{where}: {expression.text} = {result} for {shape}; it must be >= {minimum}")
            return result

        return evaluate

    def dims(self, value: Any, key: str) -> Callable[[Shape], tuple[int, int, int]]:
        """grid or block: one formula, or a list of 1 to 3 (x, y, z), missing ones 1."""
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3:
            raise self.fail(key, f"give 1 to 3 sizes (x, y, z), not {len(items)}")
        parts = [self.shape_function(item, f"{key}[{i}]", 1) for i, item in enumerate(items)]
        return lambda s: tuple(part(s) for part in parts) + (1,) * (3 - len(parts))  # type: ignore[return-value]

    def whole(self, table: dict, key: str, minimum: int = 1) -> int | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f".{key}", f"must be a whole number >= {minimum}, not {value!r}")
        return value

    def strings(self, table: dict, key: str) -> list[str]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f".{key}", f"must be a list of strings, not {value!r}")
        return value

    def nvcc_options(self, table: dict) -> tuple[str, ...]:
        """`options`, each one on the allow-list (`kernels.nvcc_options`): nvcc hands some values to /bin/sh."""
        options = self.strings(table, "options")
        for i, option in enumerate(options):
            problem = option_problem(option)
            if problem is not None:
                raise self.fail(f".options[{i}]", problem)
        return tuple(options)

    def text(self, table: dict, key: str, default: str) -> str:
        value = table.get(key, default)
        if not isinstance(value, str):
            raise self.fail(f".{key}", f"must be a string, not {value!r}")
        return value


def _table(reader: _Reader, value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise reader.fail(key, "must be a table")
    return value


def _source(reader: _Reader, table: dict) -> Path:
    source = table.get("source")
    if not isinstance(source, str) or not source:
        raise reader.fail(".source", 'missing: the kernel file, e.g. source = "mine.cu"')
    path = (reader.facts.path.parent / source).resolve()
    if path.is_dir():  # `source = "kernels"` was said to be "no such file"
        raise reader.fail(".source", f"{source}: a folder, not a kernel file (paths are relative to "
                                     f"{reader.facts.path.name})")
    if not path.is_file():
        raise reader.fail(".source", f"{source}: no such file (paths are relative to {reader.facts.path.name})")
    problem = path_problem(str(path))
    if problem is not None:  # its folder reaches nvcc as -I, the path a #line directive
        raise reader.fail(".source", f"{source}: {problem}")
    return path


def _named_table(reader: _Reader, table: dict, key: str, minimum: int) -> dict[str, Callable[[Shape], int]]:
    """defines or workspaces: identifier = formula."""
    entries = _table(reader, table.get(key, {}), f".{key}")
    result = {}
    for name, value in entries.items():
        if not _IDENTIFIER.fullmatch(name):
            raise reader.fail(f".{key}.{name}", "is not a C identifier")
        result[name] = reader.shape_function(value, f".{key}.{name}", minimum)
    return result


def _launches(reader: _Reader, table: dict, allowed_args: set[str]) -> tuple[Launch, ...]:
    kernels = table.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        raise reader.fail(".kernels", "missing: one [[...kernels]] table per kernel, in launch order")
    launches = []
    for i, kernel in enumerate(kernels):
        key = f".kernels[{i}]"
        kernel = _table(reader, kernel, key)
        unknown = set(kernel) - _KERNEL_KEYS
        if unknown:
            known = ", ".join(sorted(_KERNEL_KEYS))
            raise reader.fail(f"{key}.{sorted(unknown)[0]}", f"unknown key (a kernel has {known})")
        name = kernel.get("name")
        if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
            raise reader.fail(f"{key}.name", f"must be the kernel's extern \"C\" name, not {name!r}")
        for required in ("grid", "block", "args"):
            if required not in kernel:
                raise reader.fail(f"{key}.{required}", "missing")
        args = kernel["args"]
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise reader.fail(f"{key}.args", "must be a list of argument names")
        for arg in args:
            if arg not in allowed_args:
                raise reader.fail(f"{key}.args", f"unknown argument {arg!r}; this variant can pass "
                                  f"{', '.join(sorted(allowed_args))}")
        launches.append(Launch(
            kernel=name,
            grid=reader.dims(kernel["grid"], f"{key}.grid"),
            block=reader.dims(kernel["block"], f"{key}.block"),
            args=tuple(args),
            smem=reader.shape_function(kernel.get("smem", 0), f"{key}.smem", 0),
        ))
    return tuple(launches)


def _constraints(reader: _Reader, table: dict) -> Constraints:
    head_dims = table.get("head_dims")
    if head_dims is not None and (not isinstance(head_dims, list) or not head_dims or not all(
            isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in head_dims)):
        raise reader.fail(".head_dims", f"must be a list of positive whole numbers, not {head_dims!r}")
    lowest, highest = reader.whole(table, "min_head_dim") or 1, reader.whole(table, "max_head_dim")
    if highest is not None and lowest > highest:  # it refused every case, one by one, as "needs d in [128, 32]"
        raise reader.fail(".max_head_dim", f"{highest} is below min_head_dim = {lowest}: no head dimension fits")
    return Constraints(
        head_dims=tuple(head_dims) if head_dims is not None else None,
        min_head_dim=lowest,
        max_head_dim=highest,
        max_seq_len=reader.whole(table, "max_seq_len"),
        seq_len_multiple=reader.whole(table, "seq_len_multiple") or 1,
    )


def _flavours(reader: _Reader, table: dict) -> dict[str, Flavour]:
    """[NAME.flavours.F]: named builds, each a description, defines, options and seq_len_multiple.
    Their defines are fixed numbers (a flavour is one build), given as formulas of nothing."""
    flavours = {}
    for name, value in _table(reader, table.get("flavours", {}), ".flavours").items():
        key = f".flavours.{name}"
        if not _IDENTIFIER.fullmatch(name):
            raise reader.fail(key, "a flavour name uses letters, digits and _")
        entry = _table(reader, value, key)
        unknown = set(entry) - _FLAVOUR_KEYS
        if unknown:
            raise reader.fail(f"{key}.{sorted(unknown)[0]}", f"unknown key (known: {', '.join(sorted(_FLAVOUR_KEYS))})")
        sub = _Reader(reader.facts, f"{reader.name}{key}")
        defines = {k: f(Shape(1, 1, 1)) for k, f in _named_table(sub, entry, "defines", -(2**62)).items()}
        flavours[name] = Flavour(
            description=sub.text(entry, "description", f"flavour {name}"),
            defines=defines,
            options=sub.nvcc_options(entry),
            seq_len_multiple=sub.whole(entry, "seq_len_multiple") or 1,
        )
    return flavours


def read_variant(facts: LaunchFacts, name: str) -> Variant:
    """Build one user variant from its table, checking every key."""
    reader = _Reader(facts, name)
    if not _VARIANT_NAME.fullmatch(name):
        raise UserVariantError(f"{facts.path}: {reader.key}: a variant name uses letters, digits, _ . + -")
    table = _table(reader, facts.variants[name], "")
    unknown = set(table) - _VARIANT_KEYS
    if unknown:
        raise reader.fail(f".{sorted(unknown)[0]}", f"unknown key (known: {', '.join(sorted(_VARIANT_KEYS))})")
    source = _source(reader, table)
    layout = table.get("layout", "separate")
    if layout not in LAYOUT_POINTERS:
        raise reader.fail(".layout", f'must be "separate" (q, k, v, o pointers) or "qkv" (interleaved), not {layout!r}')
    workspaces = _named_table(reader, table, "workspaces", 0)
    clash = set(workspaces) & {*SCALAR_ARGS, *LAYOUT_POINTERS["separate"], *LAYOUT_POINTERS["qkv"], "l2_flush"}
    if clash:
        raise reader.fail(f".workspaces.{sorted(clash)[0]}", "is a reserved argument name")
    defines = _named_table(reader, table, "defines", -(2**62))
    allowed_args = {*SCALAR_ARGS, *LAYOUT_POINTERS[layout], *workspaces}
    steps = reader.shape_function(table.get("steps", 1), ".steps", 1)
    arch = table.get("arch")
    if arch is not None and not (isinstance(arch, str) and _ARCH.fullmatch(arch)):
        raise reader.fail(".arch", f'must name one architecture, such as "sm_90a" or "sm_80", not {arch!r}')
    unit = table.get("unit", "ffma")
    if unit not in USER_UNITS:
        raise reader.fail(".unit", f"must be one of {', '.join(repr(u) for u in USER_UNITS)}, not {unit!r}"
                          + (_MEMORY_UNIT if isinstance(unit, str) and unit in COMPUTE_UNITS else ""))
    return Variant(
        name=name,
        report=f"user ({facts.path.name})",
        technique=reader.text(table, "technique", f"your kernel in {source.name}"),
        source=str(source),
        launches=_launches(reader, table, allowed_args),
        constraints=_constraints(reader, table),
        defines=lambda s: {key: value(s) for key, value in defines.items()},
        workspace=workspaces,
        options=reader.nvcc_options(table),
        steps=steps,
        layout=layout,
        flavours=_flavours(reader, table),
        arch=arch,
        unit=unit,
    )


# -- lookup -------------------------------------------------------------------------------------------------
_CACHE: dict[tuple[Path, float, str], Variant] = {}


def load_variants(facts: LaunchFacts) -> dict[str, Variant]:
    """Every variant of a launch-facts file, each read once per version of the file."""
    stamp = facts.path.stat().st_mtime
    loaded = {}
    for name in facts.variants:
        key = (facts.path, stamp, name)
        if key not in _CACHE:
            _CACHE[key] = read_variant(facts, name)
        loaded[name] = _CACHE[key]
    return loaded


def user_variants(start: Path | None = None) -> list[Variant]:
    """The variants of the launch facts found from `start` (the working directory) upwards."""
    facts = find_launch_facts(start)
    return list(load_variants(facts).values()) if facts is not None else []


def looks_like_path(name: str) -> bool:
    return name.endswith((".cu", ".cuh")) or "/" in name


def variant_for_source(kernel: str) -> Variant:
    """The user variant whose `source` is this .cu file, from the launch facts found from its folder up."""
    path = Path(kernel).resolve()
    if not path.is_file():
        raise UserVariantError(f"{kernel}: no such kernel file")
    facts = find_launch_facts(path.parent)
    if facts is None:
        raise UserVariantError(f"{kernel}: no {CONFIG_FILE} (or [tool.attnbench] in pyproject.toml) in its folder "
                               "or above gives its launch facts; `attnbench new NAME` writes a starting pair")
    for variant in load_variants(facts).values():
        if variant.source == str(path):
            return variant
    raise UserVariantError(f"{kernel}: {facts.path} has no variant with source = \"{path.name}\"")


def find_user_variant(name: str) -> Variant | None:
    """A user variant by name (from the working directory's launch facts) or by its kernel file's path."""
    if looks_like_path(name):
        return variant_for_source(name)
    facts = find_launch_facts()
    if facts is None or name not in facts.variants:
        return None
    return load_variants(facts)[name]
