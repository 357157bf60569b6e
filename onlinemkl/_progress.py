"""Progress bars that keep moving while a compilation holds the caller: :class:`Ticker`.

A compilation is one long call that never returns to its progress bar, so the bar's elapsed
time would freeze.  :class:`Ticker` redraws it from a daemon thread instead.  The background
compilations (:mod:`onlinemkl._lazy`), :func:`onlinemkl.warmup` and the Ray workers' first
compilation (:mod:`onlinemkl.distributed.ray`) all draw their bars through it.  It imports
nothing of onlinemkl, so every layer can use it (tqdm itself is imported by the callers, when
they draw a bar).
"""

from __future__ import annotations

import threading

__all__ = ["BAR_DELAY_S", "Ticker"]

#: Seconds before a progress bar appears (tqdm's ``delay``), and between two redraws: a cache
#: load ends well within it and draws nothing, only a compilation shows a bar.
BAR_DELAY_S = 0.5


class Ticker:
    """Refreshes a progress bar twice a second, so its elapsed time moves during a compilation.

    A compilation is one long call that never returns to the bar; a daemon thread redraws
    it instead (Numba's compiler is mostly Python, so the thread gets its turns).  A context
    manager: the thread runs within the block, and only for a bar that is shown.
    """

    def __init__(self, bar, every=BAR_DELAY_S):
        self.bar, self.every = bar, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="onlinemkl-warmup-ticker", daemon=True)

    def _run(self):
        while not self._stop.wait(self.every):
            self.bar.refresh()

    def __enter__(self):
        if not self.bar.disable:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
