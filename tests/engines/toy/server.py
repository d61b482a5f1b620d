"""The toy inference server: one argparse parser, like SGLang's and vLLM's.

`python -m toy.server --model /m --shards 2` parses its arguments and prints them; the installed
script would be called `toyserve`. driftwatch never runs it: gen_catalog.py dumps `build_parser()`.
"""
from __future__ import annotations

import argparse
import json
import sys

VERSION = "1.0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toyserve", description="Serve a toy model.")
    parser.add_argument("--model", type=str, default=None, help="Model path or hub name.")
    parser.add_argument("--shards", type=int, default=1, help="GPUs the model is split over.")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="Most requests decoded at once (computed from GPU memory when unset).")
    parser.add_argument("--max-batch-tokens", type=int, default=8192, help="Most tokens prefilled at once.")
    parser.add_argument("--no-graphs", action="store_true", help="Do not capture CUDA graphs.")
    parser.add_argument("--kv-dtype", choices=["auto", "fp8"], default="auto", help="KV-cache number format.")
    parser.add_argument("--port", type=int, default=8000, help="Port to listen on.")
    parser.add_argument("--log-level", choices=["debug", "info", "warning"], default="info", help="Log level.")
    parser.add_argument("--seed", type=int, default=0, help="Sampling seed.")  # no concept: compared by key
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    print(json.dumps(vars(args), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
