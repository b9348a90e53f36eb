"""Worker process for the durability test: feed a deterministic stream into a
store-backed MTA, flush every FLUSH items and print ``ACK <items consumed>`` after each
flush returns. The test SIGKILLs this process mid-stream.

Usage: python mta_durability_worker.py CLASS STORE_URL NAMESPACE TOTAL FLUSH
"""

from __future__ import annotations

import sys

from windowagg.fifo.amta import AMTA
from windowagg.fifo.log_mta import LogMTA
from windowagg.fifo.wsp import TimeWindow
from windowagg.monoids import Composite, MatMul2x2, Max
from windowagg.storage import open_store

SIZES = {"buffer_size": 64, "cache_size": 32, "refill_below": 16, "page_size": 8}


def monoid() -> Composite:
    return Composite(Max(), MatMul2x2())


def policy() -> TimeWindow:
    return TimeWindow(60, time=0)


def stream(total: int) -> list[tuple[int, tuple[int, int, int, int]]]:
    """A deterministic bursty stream: timestamps with repeats and long gaps."""
    out = []
    t = 0
    x = 12345
    for i in range(total):
        x = (x * 1103515245 + 12345) % 2**31
        t += (0, 0, 1, 1, 2, 3, 45)[x % 7]
        m = (1, x % 5 + 1, 0, 1) if i % 2 else (1, 0, x % 3 + 1, 1)
        out.append((t, m))
    return out


def make(cls_name: str, url: str, ns: str) -> AMTA | LogMTA:
    cls = AMTA if cls_name == "AMTA" else LogMTA
    return cls(monoid(), policy=policy(), store=open_store(url), namespace=ns, **SIZES)


def main(argv: list[str]) -> int:
    cls_name, url, ns, total, flush = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    w = make(cls_name, url, ns)
    start = w.checkpoint_token or 0
    items = stream(total)
    for i in range(start, total):
        w.insert_and_enforce(items[i])
        if (i + 1) % flush == 0:
            w.flush(token=i + 1)
            print(f"ACK {i + 1}", flush=True)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
