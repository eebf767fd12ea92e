"""attnbench.sandbox.held_signals: an interrupt during a room's teardown waits for the teardown to end."""

from __future__ import annotations

import os
import signal

import pytest

from attnbench.sandbox import case_disk, held_signals
from attnbench.sandbox.room import Sandbox, SandboxSettings


def test_an_interrupt_inside_is_raised_once_the_block_is_over():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with held_signals.held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("after the signal")  # reached: the signal did not interrupt the block
    assert done == ["after the signal"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is back


def test_a_closed_terminals_sighup_inside_waits_for_the_block_too():
    """SIGHUP ended the process in the middle of a room's teardown, leaving its mounts on the host."""
    def hung_up(number, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGHUP, hung_up)
    done = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with held_signals.held():
                os.kill(os.getpid(), signal.SIGHUP)
                done.append("after the signal")
    finally:
        signal.signal(signal.SIGHUP, before)
    assert done == ["after the signal"]


def test_a_room_interrupted_while_it_is_taken_down_is_taken_down_whole(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM in the middle of a room's teardown left its view's tmpfs and overlays mounted on the host
    (a judge killed by SIGTERM, in the test of that, flakily): the teardown now ends first, then the interrupt."""
    program = tmp_path / "hw4"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    room = Sandbox.open(program, SandboxSettings())
    real = case_disk.uncap_all_below

    def interrupted(root):
        os.kill(os.getpid(), signal.SIGINT)
        real(root)

    monkeypatch.setattr(case_disk, "uncap_all_below", interrupted)
    with pytest.raises(KeyboardInterrupt):
        room.close()
    assert not room.root.exists() and str(room.root) not in open("/proc/self/mounts").read()
