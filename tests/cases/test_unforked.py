"""Large arrays a judge holds are in mappings no child process inherits; small ones are numpy's own."""

from __future__ import annotations

import os
import pickle

import numpy as np

from attnbench.cases import unforked


def _mapping_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds `address` (/proc/self/smaps)."""
    inside = False
    for line in open("/proc/self/smaps"):
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(part, 16) for part in head.split("-"))
            inside = low <= address < high
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    return []


def test_a_large_array_lives_in_a_mapping_no_child_gets():
    array = unforked.empty((3, 1000, 200), np.float32)
    array[...] = 1.5
    address = array.__array_interface__["data"][0]
    assert array.shape == (3, 1000, 200) and array.dtype == np.float32 and array.flags.writeable
    assert "dc" in _mapping_flags(address)  # smaps' word for "do not copy this area on fork"
    pid = os.fork()
    if pid == 0:  # the child looks for the mapping in its own address space, and does not touch it
        held = any(int(low, 16) <= address < int(high, 16)
                   for low, high in (line.split()[0].split("-") for line in open("/proc/self/maps")))
        os._exit(1 if held else 0)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_a_small_array_is_numpys_own_and_every_array_pickles_as_its_values():
    small = unforked.empty((10, 10), np.float64)
    assert small.base is None  # np.empty's: it owns its memory
    large = unforked.empty((512, 1024), "<f4")
    large[...] = np.arange(1024, dtype=np.float32)
    assert np.array_equal(pickle.loads(pickle.dumps(large)), large)  # a pool worker gets the values
