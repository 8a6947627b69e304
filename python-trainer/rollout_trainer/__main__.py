"""python -m rollout_trainer sft|grpo|serve|validate --spec job.yaml

Exit status: 0 succeeded, 1 the training failed (result.json says why), 2 the spec or the
data is invalid (one line on stderr names the field or FILE:LINE)."""

import argparse
import sys
import traceback
from typing import List, Optional

from .errors import SpecError, TrainingError
from .events import Emitter, now


def _run_training(spec, kind: str) -> int:
    emitter = Emitter(spec.out)
    started = now()
    base = {"job": spec.id, "phase": kind, "base_model": spec.model.base, "backend": spec.model.backend, "started_at": started}
    try:
        if kind == "sft":
            from .sft import run_sft as run
        else:
            from .grpo import run_grpo as run
        out = run(spec, emitter)
    except SpecError as exc:
        result = {**base, "status": "failed", "error": str(exc), "ended_at": now()}
        emitter.write_result(result)
        emitter.emit({"event": "error", "message": str(exc)})
        print(f"rollout_trainer: {exc}", file=sys.stderr)
        return 2
    except (TrainingError, Exception) as exc:  # noqa: BLE001 — any failure of the run is reported, never lost
        message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TrainingError) else str(exc)
        traceback.print_exc()
        result = {**base, "status": "failed", "error": message, "ended_at": now()}
        emitter.write_result(result)
        emitter.emit({"event": "error", "message": message})
        return 1
    result = {**base, "status": "succeeded", "error": None, "ended_at": now(), **out}
    emitter.write_result(result)
    emitter.emit({"event": "done", "result": result})
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="rollout_trainer", description="Rollout Lab's trainer job.")
    parser.add_argument("command", choices=["sft", "grpo", "serve", "validate"])
    parser.add_argument("--spec", default="job.yaml", help="the job spec (default job.yaml in the bundle)")
    parser.add_argument("--port", type=int, default=None, help="serve: override spec.serve.port")
    args = parser.parse_args(argv)
    from .spec import load_spec

    try:
        spec = load_spec(args.spec)
        if args.command not in ("validate", spec.kind):
            raise SpecError(f"{args.spec}: phase.kind is {spec.kind}, but the command is {args.command}")
    except SpecError as exc:
        print(f"rollout_trainer: {exc}", file=sys.stderr)
        return 2
    if args.command == "validate":
        print(f"{args.spec}: valid {spec.kind} job {spec.id}")
        return 0
    if args.command == "serve":
        from .serve import main as serve_main

        return serve_main(spec, args)
    return _run_training(spec, args.command)


if __name__ == "__main__":
    sys.exit(main())
