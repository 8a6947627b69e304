"""The served versions and the control API: status, metrics, load an adapter, and one GRPO
update on a batch of groups that becomes the next version.

The served name (model.servedName, or the job id) always answers with the current
version; each version also answers to its own name while it is current, so a rollout
that asked for `policy-v3` never silently gets `policy-v4`: it gets a 404 instead."""

import os
import re
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..data import check_rl_record
from ..errors import SpecError, TrainingError
from ..events import Emitter
from ..grpo import grpo_update
from ..hparams import ServeParams, resolve_hparams
from ..policy import Policy
from ..spec import JobSpec
from .protocol import ApiError

VERSION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


class Versions:
    """The served name and the version it resolves to, with every version so far."""

    def __init__(self, name: str, adapter: str | None) -> None:
        self.name = name
        self.current = name
        self.adapter = adapter
        self.history: list[str] = [name]

    def resolve(self, requested: str | None) -> str:
        if requested in (None, "", self.name, self.current):
            return self.current
        if requested in self.history:
            raise ApiError(404, f"model {requested!r} is an older version of {self.name!r}, no longer served; ask for {self.name!r} or {self.current!r}", "model_not_found", "model")
        raise ApiError(404, f"model {requested!r} is not served here; ask for {self.name!r} (now version {self.current!r})", "model_not_found", "model")

    def next_name(self) -> str:
        """`<name>-v<k>`, one past the highest such version so far."""
        pattern = re.compile(re.escape(self.name) + r"-v(\d+)$")
        numbers = [int(m.group(1)) for m in (pattern.match(v) for v in self.history) if m]
        return f"{self.name}-v{max(numbers, default=0) + 1}"

    def check_new_name(self, version: Any) -> str:
        if not isinstance(version, str) or not VERSION_NAME.match(version):
            raise ApiError(400, "version: a name of letters, digits and . _ : - (at most 128), e.g. policy-v7", "invalid_value", "version")
        if version == self.name:
            raise ApiError(400, f"version: {version!r} is the served name itself; give the version its own name", "invalid_value", "version")
        return version

    def switch(self, version: str, adapter: str | None) -> None:
        if version in self.history:
            self.history.remove(version)
        self.history.append(version)
        self.current = version
        self.adapter = adapter

    def listing(self, created: int, root: str) -> list[dict[str, Any]]:
        """The served name first, then every version (only the current one answers)."""
        entry = lambda v: {"id": v, "object": "model", "created": created, "owned_by": "rollout-lab", "root": root, "parent": None if v == self.name else self.name, "current": v == self.current}  # noqa: E731
        return [entry(self.name), *[entry(v) for v in self.history if v != self.name]]


def check_records(records: Any) -> list[dict[str, Any]]:
    """The records as the GRPO update takes them (normalised by data.check_rl_record, the
    same check a grpo job's data gets); a 400 naming the first bad record and field."""
    if not isinstance(records, list) or not records:
        raise ApiError(400, "records: a non-empty list of RL records (as `rollout-lab export --format rl` writes them)", "invalid_value", "records")
    checked = []
    for i, rec in enumerate(records):
        try:
            checked.append(check_rl_record(rec, f"records[{i}]"))
        except SpecError as exc:
            raise ApiError(400, str(exc), "invalid_value", f"records[{i}]") from None
    return checked


class Controller:
    """State shared by the HTTP handlers. `publish(version, path)` makes a saved adapter live
    in a separate serving engine (vLLM); the in-process policy needs no such step."""

    def __init__(self, spec: JobSpec, policy: Policy, emitter: Emitter, publish: Callable[[str, Path], None] | None = None) -> None:
        self.spec = spec
        self.policy = policy
        self.emitter = emitter
        self.publish = publish
        self.versions = Versions(spec.served_name, spec.model.adapter)
        self.hp = spec.params(ServeParams)
        self.state = "idle"
        self.steps = 0
        self.examples = 0
        self.started = time.time()
        # One update or load at a time; chat requests only wait on policy.lock.
        self._gate = threading.Lock()

    # -- reading ---------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"state": self.state, "version": self.versions.current, "base_model": self.policy.base_model, "backend": self.policy.backend,
                "device": str(self.policy.device), "steps": self.steps, "uptime_s": round(time.time() - self.started, 3)}

    def metrics(self) -> dict[str, Any]:
        return {"metrics": list(self.emitter.metrics_history)}

    def version(self) -> dict[str, Any]:
        return {"version": self.versions.current, "adapter": self.versions.adapter}

    # -- changing ----------------------------------------------------------------------------
    def _shown(self, path: Path) -> str:
        """Bundle-relative when inside the bundle (as the events and result.json say paths)."""
        return self.spec.rel(path)

    def _enter(self, what: str) -> None:
        if not self._gate.acquire(blocking=False):
            raise ApiError(409, f"{what}: a training update or adapter load is already running; wait for its answer (GET /control/status says idle)", "busy")

    def _activate(self, version: str, path: Path) -> dict[str, Any]:
        if self.publish:
            self.publish(version, path)
        shown = self._shown(path)
        self.versions.switch(version, shown)
        self.emitter.emit({"event": "version", "version": version, "adapter": shown})
        return {"version": version, "adapter": shown}

    def load(self, body: dict[str, Any]) -> dict[str, Any]:
        adapter = body.get("adapter")
        if not isinstance(adapter, str) or not adapter.strip():
            raise ApiError(400, "adapter: the adapter folder to serve, relative to the job bundle or absolute on the server", "missing_field", "adapter")
        path = Path(adapter) if os.path.isabs(adapter) else self.spec.bundle_dir / adapter
        if not path.is_dir():
            raise ApiError(400, f"adapter: no folder {adapter!r} on the server (relative paths start at the job bundle {self.spec.bundle_dir})", "invalid_value", "adapter")
        version = self.versions.check_new_name(body["version"]) if body.get("version") is not None else self.versions.next_name()
        self._enter("/control/load")
        try:
            with self.policy.lock:
                try:
                    self.policy.load_adapter(path, version)
                except SpecError as exc:
                    raise ApiError(400, f"adapter: {exc}", "invalid_value", "adapter") from None
                # The next update starts from these weights, with a fresh optimizer for them.
                self.policy.optimizer = None
                _eval_mode(self.policy)
                # Switched under the lock: a request never gets these weights under the old name.
                return self._activate(version, path)
        finally:
            self._gate.release()

    def _train_hparams(self, given: Any) -> ServeParams:
        if given is None:
            return self.hp
        if not isinstance(given, dict):
            raise ApiError(400, "hyperparameters: expected an object of serve hyper-parameters, e.g. {learning_rate: 1e-6}", "invalid_value", "hyperparameters")
        try:
            return resolve_hparams("serve", {**asdict(self.hp), **given})
        except SpecError as exc:
            raise ApiError(400, str(exc), "invalid_value", "hyperparameters") from None

    def train(self, body: dict[str, Any]) -> dict[str, Any]:
        records = check_records(body.get("records"))
        hp = self._train_hparams(body.get("hyperparameters"))
        self._enter("/control/train")
        try:
            self.state = "training"
            with self.policy.lock:
                out = self._update(records, hp)
                if out["steps"] == 0:
                    return self._unchanged(out)
                version = self.versions.next_name()
                target = self.spec.out / "versions" / version
                self.policy.save_adapter(target)
                self.policy.version = version
                answer = self._activate(version, target)
            return {**answer, "updated": True, "steps": self.steps, "metrics": _answer_metrics(out)}
        finally:
            self.state = "idle"
            self._gate.release()

    def _update(self, records: list[dict[str, Any]], hp: ServeParams) -> dict[str, Any]:
        """grpo_update under policy.lock; a failed update puts the served weights back."""
        try:
            out = grpo_update(self.policy, records, hp, self.emitter, step_offset=self.steps)
        except SpecError as exc:
            raise ApiError(400, str(exc), "invalid_value", "records") from None
        except Exception as exc:  # noqa: BLE001 — the server keeps serving; the client learns why
            traceback.print_exc()
            restored = self._restore()
            message = str(exc) if isinstance(exc, TrainingError) else f"{type(exc).__name__}: {exc}"
            raise ApiError(500, f"the update failed: {message}; {restored}", "training_failed") from None
        finally:
            _eval_mode(self.policy)
        self.steps += out["steps"]
        self.examples += out["records"]
        return out

    def _restore(self) -> str:
        """Reload the current version's adapter after a failed update, which may have taken
        some optimizer steps already."""
        adapter = self.versions.adapter
        if not adapter:
            return f"the weights may be partly updated and there is no saved adapter to go back to; restart the server to serve {self.versions.current} again"
        try:
            self.policy.load_adapter(self.spec.bundle_dir / adapter if not os.path.isabs(adapter) else Path(adapter), self.versions.current)
            self.policy.optimizer = None
        except Exception as exc:  # noqa: BLE001
            return f"reloading {adapter} failed too ({exc}); restart the server"
        return f"{self.versions.current} ({adapter}) is served again"

    def _unchanged(self, out: dict[str, Any]) -> dict[str, Any]:
        """No optimizer step was taken: no new version, and the answer says why, so the
        caller can sample more per task (or raise the length limits)."""
        if out.get("useful_groups", 0) == 0:
            why = (f"no group has two records with different rewards ({out.get('singleton_groups', 0)} single-record groups, "
                   f"{out.get('zero_variance_groups', 0)} with equal rewards)")
        else:
            why = ("every record with a signal is longer than max_prompt_length / max_response_length or the model's context "
                   f"({out.get('dropped_too_long', 0)} dropped as too long)")
        note = f"no optimizer step: {why}; still serving {self.versions.current}"
        self.emitter.log(f"note: {note}")
        return {"version": self.versions.current, "adapter": self.versions.adapter, "updated": False, "note": note, "steps": self.steps, "metrics": _answer_metrics(out)}


def _answer_metrics(out: dict[str, Any]) -> dict[str, Any]:
    """The last metrics event's numbers and the update's counts (steps, records, useful
    records, groups without signal, records dropped), which the caller plots per round."""
    counts = {k: v for k, v in out.items() if k != "metrics" and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {**out.get("metrics", {}), **counts}


def _eval_mode(policy: Policy) -> None:
    """Sampling with dropout on (LoRA dropout after an update) would serve noisy logprobs."""
    model = getattr(policy, "model", None)
    if model is not None and hasattr(model, "eval"):
        model.eval()
