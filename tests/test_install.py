"""A built wheel installs into a fresh virtualenv and runs from any folder, with its kernels and suite
manifest found as package data and generated testcases in the per-user data folder."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(folder), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (found,) = folder.glob("attnbench-*.whl")
    return found


def test_the_wheel_carries_the_kernels_and_the_suite_manifest(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    kernels = {p.name for p in (ROOT / "cuda").iterdir() if p.suffix in (".cu", ".cuh", ".cpp")}  # kernel_records.cpp: the collector
    assert {f"attnbench/_cuda/{k}" for k in kernels} <= names
    assert "attnbench/_testcases/suite.json" in names
    assert not any("/data/" in n for n in names), "generated testcases must not ship"


def test_an_installed_wheel_runs_from_another_folder(wheel, tmp_path):
    # The venv sees this interpreter's numpy, click and rich (no download), but attnbench only from the wheel.
    # A .pth naming the running environment's site folders does that from a virtualenv too, where
    # system_site_packages would reach the base interpreter's packages instead; paths in a .pth do not run
    # the .pth files there, so an editable attnbench stays out of sight.
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    venv_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip()
    (Path(venv_site) / "parent_environment.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "--no-index", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("ATTNBENCH_DATA", "PYTHONPATH")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")

    def attnbench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(python), "-m", "attnbench", *args], cwd=elsewhere, env=env, capture_output=True,
                              text=True, timeout=300)

    where = subprocess.run([str(python), "-c", "import attnbench.locations as l; print(l.kernel_dir())"],
                           cwd=elsewhere, env=env, capture_output=True, text=True)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr
    assert attnbench("--help").returncode == 0
    done = attnbench("run", "t02", "out.bin", "--variant", "cpu", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
    assert (elsewhere / "out.bin").stat().st_size == 160 * 128 * 64 * 4
    assert (tmp_path / "xdg" / "attnbench" / "testcases" / "t02.in").exists()
