"""Ctrl-C, SIGTERM and SIGHUP held back while the judge takes a room down, then delivered.

A room's teardown unmounts its view's overlays and tmpfs mounts and removes its folder. An interrupt
landing in the middle of it (Python raises KeyboardInterrupt between any two bytecodes) left the mounts on
the host, where no later judge with another temporary folder ever finds them. Blocking the signals with
pthread_sigmask is not enough: a signal a process receives goes to any thread that does not block it, and
Python then runs its handler in the main thread all the same. So the handlers themselves are swapped for
ones that only remember the signal, and the signal is raised again once the teardown is over.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

HELD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def held() -> Iterator[None]:
    """What runs inside is not interrupted by SIGINT, SIGTERM or SIGHUP; one that came meanwhile is raised at the end
    (to the handler it was meant for). Outside the main thread, where Python runs no handler, it holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    before = {number: signal.signal(number, lambda number, frame: came.append(number)) for number in HELD}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        if came:
            signal.raise_signal(came[0])
