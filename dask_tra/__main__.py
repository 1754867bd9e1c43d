"""Command line: ``python -m dask_tra demo``."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dask_tra", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="plan and run the TRA paper's three matmul shapes")
    demo.add_argument("--scheduler", default=None, help="address of an existing dask scheduler")
    demo.add_argument("--workers", type=int, default=4, help="workers of the embedded LocalCluster")
    demo.add_argument("--scale", type=float, default=1.0, help="scale the matrix sizes (1.0 = full demo)")
    args = parser.parse_args(argv)
    from .demo import run_demo

    return run_demo(scheduler=args.scheduler, workers=args.workers, scale=args.scale)


if __name__ == "__main__":
    sys.exit(main())
