"""Where attnbench's own files are, installed or in a source tree, and where generated data goes.

The project keeps its kernels in `cuda/` and the suite manifest in `testcases/` at the top of the
source tree; a wheel carries them inside the package as `attnbench/_cuda` and `attnbench/_testcases`
(pyproject.toml maps them in). Every lookup goes through this module, so both layouts work.
"""

from __future__ import annotations

import os
import re
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PACKAGE_DIR.parent
DATA_ENV = "ATTNBENCH_DATA"
CACHE_ENV = "ATTNBENCH_CACHE"


def _packaged(installed_name: str, source_name: str) -> Path:
    """The installed copy of a data folder when there is one, else the source tree's."""
    installed = PACKAGE_DIR / installed_name
    return installed if installed.is_dir() else SOURCE_ROOT / source_name


def kernel_dir() -> Path:
    """The folder of the built-in `.cu` files and `common.cuh`."""
    return _packaged("_cuda", "cuda")


def cache_dir() -> Path:
    """$ATTNBENCH_CACHE, else the per-user cache folder for attnbench."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    try:
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("attnbench"))
    except ImportError:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnbench"


def suite_manifest() -> Path:
    """`suite.json`: every built-in case with its shape, seed, provenance and sha256."""
    return _packaged("_testcases", "testcases") / "suite.json"


def shipped_limits(name: str) -> Path:
    """A ready --time-limits file shipped beside the suite manifest (limits_rtx3070_2024.toml)."""
    return _packaged("_testcases", "testcases") / name


def shipped_file_at(path: str | os.PathLike) -> Path | None:
    """The file attnbench ships and reads (the suite manifest, a kernel source, a module or data file of the
    package) that writing `path` would replace, or None. Links and `..` are seen through."""
    target = Path(os.path.realpath(path))
    manifest = Path(os.path.realpath(suite_manifest()))
    if target == manifest or (target.exists() and manifest.exists() and os.path.samefile(target, manifest)):
        return manifest
    # the --time-limits files shipped beside the manifest (shipped_limits): a run's output once replaced one
    if target.parent == manifest.parent and target.suffix == ".toml" and target.is_file():
        return target
    for folder in (Path(os.path.realpath(kernel_dir())), PACKAGE_DIR):
        if target.is_relative_to(folder) and target != folder:
            return target
    return None


# the files the launch facts of your kernels are looked up in, from the working folder up (kernels.user)
LAUNCH_FACTS_FILES = ("attnbench.toml", "pyproject.toml")


def launch_facts_file_at(path: str | os.PathLike) -> Path | None:
    """The attnbench.toml (anywhere) or pyproject.toml (from the working folder up to the root) that
    commands read for your kernels' launch facts which writing `path` would replace, or None: an output
    written there breaks every later command. Links and `..` are seen through."""
    target = Path(os.path.realpath(path))
    here = Path.cwd().resolve()
    if target.name in LAUNCH_FACTS_FILES and target.is_file() and (
            target.name == LAUNCH_FACTS_FILES[0] or target.parent in (here, *here.parents)):
        return target  # an attnbench.toml is read wherever it is (for a kernel given by its path), by its name
    return None


def package_file(name: str) -> Path:
    """A data file shipped beside the package's modules (report claims, datasheet ceilings)."""
    return PACKAGE_DIR / name


def in_source_tree() -> bool:
    """True when running from a writable checkout (an editable install or PYTHONPATH)."""
    folder = SOURCE_ROOT / "testcases"
    return (folder / "suite.json").is_file() and os.access(folder, os.W_OK) and not (PACKAGE_DIR / "_testcases").is_dir()


def data_dir() -> Path:
    """Where generated inputs and references live: $ATTNBENCH_DATA, else testcases/data in a
    writable checkout, else the per-user data folder (platformdirs)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    if in_source_tree():
        return SOURCE_ROOT / "testcases" / "data"
    from platformdirs import user_data_dir

    return Path(user_data_dir("attnbench")) / "testcases"


def installed_from_wheel() -> bool:
    """True when attnbench runs from an installed package (pip install . or a wheel), not a source tree."""
    return (PACKAGE_DIR / "_testcases").is_dir()


def extra_install_command(extras: str) -> str:
    """How to install the optional extras `extras` ("gpu", "gpu,triton") into this attnbench, as a command in
    backquotes. From a source tree, the README's editable install; from a wheel, whose folder has no
    pyproject.toml to name (`pip install -e '.[gpu]'` failed in any folder), the extras' own packages."""
    if not installed_from_wheel():
        return f"`pip install -e '.[{extras}]'` in {SOURCE_ROOT}"
    wanted = set(extras.split(","))
    try:
        declared = metadata.requires("attnbench") or []
    except metadata.PackageNotFoundError:
        declared = []
    packages: list[str] = []
    for line in declared:
        # `pycuda>=2024.1; extra == "gpu"`: the packaging library would parse the marker, but it is no
        # dependency of attnbench's, and only the extra's name is read from it
        requirement, _, marker = line.partition(";")
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", marker)
        if extra is not None and extra.group(1) in wanted and requirement.strip() not in packages:
            packages.append(requirement.strip())
    if not packages:
        return f"the packages of attnbench's {extras} extra (its pyproject.toml names them)"
    return "`pip install " + " ".join(f"'{package}'" for package in packages) + "`"


def project_root_for_git() -> Path:
    """The folder `git rev-parse` runs in for saved results' commit."""
    return SOURCE_ROOT
