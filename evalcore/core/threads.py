"""One BLAS thread for the process (OpenBLAS, through threadpoolctl).

OpenBLAS runs a matrix product on every core with threads that spin while they wait. When another
process keeps a core busy (a scoring worker beside the dashboard, a second page server), the spinning
threads fight it: the rank bootstrap's products (a 50 x 50,000 by 50,000 x 110 product, 20 of them
for a 50,000-item track) took 12 s instead of 0.9 s with one thread, measured on the 2-core machine
with a scoring run beside it. The products here are small; one thread is fast enough, and a page
server's other core is left to the other page server or to the worker. Called by the CLI and the
dashboard, never on plain `import evalcore`.

single_blas_thread() is the same limit for one block, whatever the process set: the USE encoder's metrics
(EV/VE/GM, ST) run their products in it, from the CLI, the notebook API or a benchmark alike. There the
package's own default (4 threads) took 220-265 s for ST on 1,000 CPC pairs instead of 7 s on the busy 2-core
machine, and EV/VE/GM on 16,000 pairs 18-73 s instead of 4-12 s (2 threads); one thread also gives the same
bits wherever the text is scored (the thread count changes the last bits of a product).
"""
from __future__ import annotations

import numpy  # noqa: F401  loaded first: threadpoolctl limits the BLAS libraries already loaded
from threadpoolctl import threadpool_limits

_limits = None


def one_blas_thread() -> None:
    """Apply once (the limit lasts for the process)."""
    global _limits
    if _limits is None:
        _limits = threadpool_limits(limits=1, user_api="blas")


def single_blas_thread():
    """A context manager: one BLAS thread inside the block for every BLAS library loaded by then (found anew,
    2 ms: scipy.linalg brings its own), the previous setting restored after it."""
    return threadpool_limits(limits=1, user_api="blas")
