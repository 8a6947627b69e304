"""python -m rollout_trainer sft|grpo|serve|validate --spec job.yaml

Run in the job bundle. Exit status: 0 succeeded; 1 the training failed (result.json and
the error event say why, the traceback is on stderr); 2 the spec or the data is invalid
(one line on stderr names the field or FILE:LINE and the fix; nothing was trained)."""

import argparse
import sys
import traceback
from typing import Any

from .errors import SpecError
from .events import Emitter, now
from .spec import JobSpec

COMMANDS = ("sft", "grpo", "serve", "validate")


def _fail(message: str) -> None:
    print(f"rollout_trainer: {message}", file=sys.stderr, flush=True)


def _run_training(spec: JobSpec, kind: str) -> int:
    emitter = Emitter(spec.out)
    result: dict[str, Any] = {"status": "failed", "job": spec.id, "phase": kind, "base_model": spec.model.base, "backend": spec.model.backend,
                              "adapter": None, "merged": None, "steps": 0, "examples": 0, "metrics": {}, "started_at": now(),
                              "ended_at": None, "error": None}
    try:
        if kind == "sft":
            from .sft import run_sft as run
        else:
            from .grpo import run_grpo as run
        out = run(spec, emitter)
    except SpecError as exc:
        code, message = 2, str(exc)
        _fail(message)
    except KeyboardInterrupt:
        code, message = 1, "interrupted"
        _fail(message)
    except Exception as exc:  # noqa: BLE001 — whatever broke, result.json must say so
        code, message = 1, f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
        _fail(message)
    else:
        result.update(out, status="succeeded", ended_at=now())
        emitter.write_result(result)
        emitter.emit({"event": "done", "result": result})
        return 0
    last = emitter.last_metrics()
    result.update(error=message, ended_at=now(), metrics={k: v for k, v in (last or {}).items() if k != "event"},
                  steps=(last or {}).get("step", 0))
    emitter.write_result(result)
    emitter.emit({"event": "error", "message": message})
    return code


def _validate(spec: JobSpec, spec_path: str) -> int:
    """The spec and its data, checked without loading a model."""
    from .data import read_rl, read_sft

    what = ""
    if spec.kind == "sft":
        what = f", {len(read_sft(spec.path(spec.train_data)))} examples in {spec.train_data}"
    elif spec.kind == "grpo":
        records = read_rl(spec.path(spec.train_data))
        what = f", {len(records)} records in {len({r['group'] for r in records})} groups in {spec.train_data}"
    print(f"{spec_path}: a valid {spec.kind} job {spec.id} ({spec.model.backend} {spec.model.base}{what})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rollout_trainer", description="Rollout Lab's trainer job: run it in the job bundle.")
    parser.add_argument("command", choices=COMMANDS, help="sft, grpo or serve: run that job; validate: check the spec and its data")
    parser.add_argument("--spec", default="job.yaml", help="the job spec (default: job.yaml in the current directory)")
    parser.add_argument("--port", type=int, default=None, help="serve: listen on this port instead of serve.port")
    args = parser.parse_args(argv)

    from .spec import load_spec

    try:
        spec = load_spec(args.spec)
        if args.command not in ("validate", spec.kind):
            raise SpecError(f"{args.spec}: phase.kind is {spec.kind}, but the command is {args.command} — run `python -m rollout_trainer {spec.kind} --spec {args.spec}`")
        if args.command == "validate":
            return _validate(spec, args.spec)
    except SpecError as exc:
        _fail(str(exc))
        return 2
    if args.command == "serve":
        from .serve import main as serve_main

        return int(serve_main(spec, args) or 0)
    return _run_training(spec, args.command)


if __name__ == "__main__":
    sys.exit(main())
