"""Where attnbench's files are, and how its extras are installed, in a source tree and from a wheel."""

from __future__ import annotations

import sys

import pytest

from attnbench import locations


def test_from_a_source_tree_an_extra_is_the_readmes_editable_install_in_that_tree():
    assert not locations.installed_from_wheel()
    said = locations.extra_install_command("gpu")
    assert said == f"`pip install -e '.[gpu]'` in {locations.SOURCE_ROOT}"


def test_from_a_wheel_an_extra_names_its_packages_not_an_editable_install_of_no_folder(monkeypatch, tmp_path):
    """From `pip install .` run in /tmp, every missing extra said `pip install -e '.[gpu]'`: there is no project
    folder to install from, so the command failed wherever it was typed."""
    (tmp_path / "_testcases").mkdir()
    monkeypatch.setattr(locations, "PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(locations.metadata, "requires", lambda name: [
        "numpy>=1.24", 'pycuda>=2024.1; extra == "gpu"', 'nvidia-ml-py>=12; extra == "gpu"',
        'triton>=3.0; sys_platform == "linux" and extra == "triton"', 'torch>=2.4; extra == "triton"',
        'matplotlib>=3.7; extra == "plot"', 'matplotlib>=3.7; extra == "test"'])
    assert locations.installed_from_wheel()
    assert locations.extra_install_command("gpu") == "`pip install 'pycuda>=2024.1' 'nvidia-ml-py>=12'`"
    assert locations.extra_install_command("gpu,triton") == ("`pip install 'pycuda>=2024.1' 'nvidia-ml-py>=12' "
                                                              "'triton>=3.0' 'torch>=2.4'`")
    assert locations.extra_install_command("plot") == "`pip install 'matplotlib>=3.7'`"


def test_the_missing_pycuda_sentence_from_a_wheel_is_one_line_that_works_from_any_folder(monkeypatch, tmp_path):
    from attnbench.backends import gpu
    from attnbench.errors import GpuUnavailable

    (tmp_path / "_testcases").mkdir()
    monkeypatch.setattr(locations, "PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(locations.metadata, "requires", lambda name: ['pycuda>=2024.1; extra == "gpu"'])
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    with pytest.raises(GpuUnavailable) as info:
        gpu._import_pycuda()
    said = str(info.value)
    assert "pip install 'pycuda>=2024.1'" in said and "-e '." not in said and "\n" not in said
