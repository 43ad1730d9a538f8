"""python3 -m acres_sim.fake_game: see acres_sim.fake_game.cli."""

import os
import sys


def _run() -> int:
    # The renders run on our own worker threads; OpenBLAS's extra threads would only spin between
    # the small matrix products of a render (measured: 140 % instead of 50 % of a core for the
    # Polaris at real time). It must be set before numpy loads; a value the user set wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from acres_sim.fake_game.cli import main

    return main()


if __name__ == "__main__":
    sys.exit(_run())
