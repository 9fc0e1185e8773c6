"""Run a real, persisted training loop in its own process (killed by the resume tests).

    python tests/storage_resume_worker.py URL FIT_LOG [--pace SECONDS]

See :func:`storage_support.run_build`: every non-empty subset of five feature groups of the
breast-cancer data is trained with scikit-learn unless already stored, then the index is
published.
"""

from __future__ import annotations

import argparse

from storage_support import run_build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("fit_log")
    parser.add_argument("--pace", type=float, default=0.0)
    args = parser.parse_args()
    fits = run_build(args.url, args.fit_log, pace=args.pace)
    print(f"published after {fits} fits")


if __name__ == "__main__":
    main()
