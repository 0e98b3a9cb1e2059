"""Draw the seeded random sample of static findings that docs/accuracy.md audits by hand.

    python bench/audit_sample.py --seed 24 --per-package 10 before=DIR_A after=DIR_B

Each DIR holds `cslint check --output-format json` reports named `<anything>.<package>.json` (one per
package). Findings are keyed by (file, line, code); the sample is drawn per package from the union of all
runs, so one verdict serves every run that reports the finding, and each run's true share is computed over
the sampled findings it reports. Prints one line per sampled finding: which runs report it, where, what.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def load(run_dir: Path) -> dict[str, dict[tuple[str, int, str], str]]:
    by_package: dict[str, dict[tuple[str, int, str], str]] = {}
    for report in sorted(run_dir.glob("*.json")):
        package = report.stem.rsplit(".", 1)[-1]
        for finding in json.loads(report.read_text(encoding="utf-8")):
            path = finding["filename"].split("site-packages/")[-1]
            by_package.setdefault(package, {})[(path, finding["line"], finding["code"])] = finding["message"]
    return by_package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="NAME=DIR")
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--per-package", type=int, default=10)
    args = parser.parse_args()
    runs = {name: load(Path(path)) for name, path in (r.split("=", 1) for r in args.runs)}
    packages = sorted({p for run in runs.values() for p in run})
    rng = random.Random(args.seed)
    for package in packages:
        union = sorted({key for run in runs.values() for key in run.get(package, {})})
        for key in sorted(rng.sample(union, min(args.per_package, len(union)))):
            found_in = ",".join(name for name, run in runs.items() if key in run.get(package, {}))
            message = next(run[package][key] for run in runs.values() if key in run.get(package, {}))
            print(f"{package}\t{found_in}\t{key[0]}:{key[1]}\t{key[2]}\t{message[:160]}")


if __name__ == "__main__":
    main()
