"""Write hierviz/data/trt_converters.json from the installed Torch-TensorRT's converter registry.

hierviz.support.sources.tensorrt() reads this snapshot when torch_tensorrt is not installed. Re-run it
(`make snapshot`) after upgrading torch-tensorrt:

    python scripts/snapshot_converters.py [--output PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hierviz import trt  # noqa: E402
from hierviz.foundation.opnames import qualname  # noqa: E402

DEFAULT_OUTPUT = ROOT / "hierviz" / "data" / "trt_converters.json"


def snapshot() -> dict:
    """The registry as JSON-ready data: version, variant, torch version, sorted op names."""
    info = trt.info()
    if not info.available:
        raise SystemExit(f"cannot snapshot: {info.error}")
    ops = sorted({qualname(target) for target in trt.converter_targets()})
    return {
        "torch_tensorrt_version": str(info.version),
        "variant": info.variant,
        "created_with_torch": torch.__version__,
        "ops": ops,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args(argv)
    data = snapshot()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {args.output}: {len(data['ops'])} ops from torch_tensorrt "
          f"{data['torch_tensorrt_version']} ({data['variant']}), torch {data['created_with_torch']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
