"""What a user's launch facts may hand to nvcc: an allow-list of options, and paths with no shell meaning.

nvcc runs its host-side steps through /bin/sh and pastes some option values (`-Xcompiler` among them) into those
command lines unquoted, so one option such as `-Xcompiler=-DX=$(cmd)` runs any command while attnbench compiles:
it can rewrite attnbench's own kernels or plant a cubin in a compiler cache. So nothing is passed on because it
is not known to be bad: an option is passed only when its name is on the list below (the device-code options a
kernel author needs), written as ONE token (`-name`, `--name` or `-name=value`), its value made of
[A-Za-z0-9_.,+=-] only (no shell metacharacter, no slash, no space, no quote). `-Xptxas`'s values are checked
against ptxas's own list the same way. A kernel's file and folder (passed as `-I` and named in a `#line`
directive) may hold no character the shell or the preprocessor reads specially.
"""

from __future__ import annotations

import re

# nvcc's options a kernel author needs, by name (both spellings where nvcc has two), True where nvcc takes a value
# (which must then follow `=` in the same token: nvcc would take the next list item as it). Left out on purpose:
# -Xcompiler/--compiler-options and -Xlinker/-Xnvlink (host tools' options), -ccbin/--compiler-bindir, -I/-L/-l,
# -include/--pre-include, -o/-odir/--keep/--keep-dir (files), -arch/-code/-gencode (the `arch` key says it),
# -rdc/-dc (a module that needs linking), --run, --dryrun, --threads, -x, -M (anything that runs, reads or writes).
NVCC_ALLOWED: dict[str, bool] = {
    **dict.fromkeys(["O0", "O1", "O2", "O3", "use_fast_math", "lineinfo", "generate-line-info", "restrict",
                     "extra-device-vectorization", "expt-relaxed-constexpr", "expt-extended-lambda",
                     "extended-lambda", "w", "disable-warnings", "Wno-deprecated-declarations",
                     "Wno-deprecated-gpu-targets", "Wreorder", "Wdefault-stream-launch", "resource-usage",
                     "source-in-ptx", "G", "device-debug"], False),
    **dict.fromkeys(["ftz", "prec-div", "prec-sqrt", "fmad", "maxrregcount", "std", "default-stream",
                     "diag-suppress", "diag-warn", "diag-error", "Werror", "dopt", "Xptxas", "ptxas-options"], True),
}
# ptxas's options allowed inside -Xptxas (comma-separated, each -name or -name=value).
PTXAS_ALLOWED = frozenset({
    "v", "verbose", "O0", "O1", "O2", "O3", "maxrregcount", "dlcm", "dscm", "def-load-cache", "def-store-cache",
    "warn-on-spills", "warn-on-local-memory-usage", "warn-on-double-precision-use", "warning-as-error",
    "allow-expensive-optimizations", "disable-optimizer-constants", "suppress-stack-size-warning",
    "fmad", "generate-line-info", "device-debug", "g",
})
_VALUE = re.compile(r"[A-Za-z0-9_.,+=-]+")
_NAMED = re.compile(r"--?([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?", re.DOTALL)
_MACRO = re.compile(r"-[DU][A-Za-z_][A-Za-z0-9_]*(?:=[A-Za-z0-9_.,+=-]*)?")
_PTXAS = re.compile(r"--?([A-Za-z][A-Za-z0-9_-]*)(?:=[A-Za-z0-9_.+-]+)?")
_PATH_EXTRA = set(" _.,+=@-/")
_FORM = ("is not one option of the form -name, --name or -name=value whose value uses only letters, digits "
         "and _ . , + = -")


def option_problem(option: str) -> str | None:
    """None when `option` may reach nvcc; else why not, in a few words."""
    if _MACRO.fullmatch(option):
        return None
    named = _NAMED.fullmatch(option)
    if named is None:
        return f"{option!r} {_FORM}"
    name, value = named.group(1), named.group(2)
    if name not in NVCC_ALLOWED:
        return (f"{option!r}: nvcc option {name!r} is not one attnbench passes on (it passes "
                f"{', '.join(sorted(NVCC_ALLOWED))}, and -DNAME=value, -UNAME)")
    if value is not None and not _VALUE.fullmatch(value):
        return f"{option!r} {_FORM}"
    if NVCC_ALLOWED[name] and value is None:
        return f"{option!r}: give its value in the same item, as -{name}=VALUE"
    if name in ("Xptxas", "ptxas-options"):
        for part in (value or "").split(","):
            inner = _PTXAS.fullmatch(part)
            if inner is None or inner.group(1) not in PTXAS_ALLOWED:
                return (f"{option!r}: ptxas option {part!r} is not one attnbench passes on (it passes "
                        f"{', '.join(sorted(PTXAS_ALLOWED))})")
    return None


def path_problem(path: str) -> str | None:
    """None when a kernel's path may be handed to nvcc (as `-I` and in a `#line` directive); else why not."""
    bad = sorted({c for c in path if not (c.isalnum() or c in _PATH_EXTRA)})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        return f"its path holds {shown}: a kernel's path may use letters, digits, spaces and _ . , + = @ - / only"
    return None
