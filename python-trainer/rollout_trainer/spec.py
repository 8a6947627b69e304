"""The job spec: YAML written by Rollout Lab, checked against the same JSON Schema its
zod schema generates (job_spec.schema.json), then the checks a schema cannot express."""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import yaml
from jsonschema import Draft202012Validator

from .errors import SpecError
from .hparams import resolve_hparams

SCHEMA_FILE = Path(__file__).with_name("job_spec.schema.json")


@dataclass(frozen=True)
class ModelSpec:
    base: str
    backend: str
    config: Optional[Dict[str, Any]]
    adapter: Optional[str]
    dtype: str
    servedName: Optional[str]


@dataclass(frozen=True)
class ServeSpec:
    host: str
    port: int


@dataclass(frozen=True)
class JobSpec:
    id: str
    phase_name: str
    kind: str
    model: ModelSpec
    hyperparameters: Dict[str, Any]
    train: Optional[str]
    manifest: Optional[str]
    output_dir: str
    resources: Dict[str, Any]
    serve: Optional[ServeSpec]
    env: List[str]
    command: List[str]
    bundle_dir: Path

    def path(self, rel: str) -> Path:
        """A bundle-relative path on this machine."""
        return self.bundle_dir / check_relative(rel, "path")

    @property
    def out(self) -> Path:
        return self.path(self.output_dir)

    @property
    def served_name(self) -> str:
        return self.model.servedName or self.id


def check_relative(rel: str, where: str) -> str:
    parts = rel.replace("\\", "/").split("/")
    if rel.startswith("/") or os.path.isabs(rel) or ".." in parts:
        raise SpecError(f"{where}: {rel!r} must be a path inside the job bundle, without '..'")
    return rel


def _schema() -> Dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def validate_document(doc: Any, name: str = "job.yaml") -> None:
    """Raises SpecError naming the first problem, by its place in the document."""
    errors = sorted(Draft202012Validator(_schema()).iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        raise SpecError(f"{name}: {where}: {e.message} — fix the spec (Rollout Lab writes it; see python-trainer/README.md)")


def load_spec(path: str) -> JobSpec:
    file = Path(path).resolve()
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"{path}: no such job spec — run in the job bundle, or pass --spec PATH") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML ({exc})") from None
    validate_document(doc, file.name)
    model = doc["model"]
    for field, value in (("data.train", doc["data"].get("train")), ("data.manifest", doc["data"].get("manifest")),
                         ("model.adapter", model.get("adapter")), ("output.dir", doc.get("output", {}).get("dir"))):
        if value:
            check_relative(value, f"{file.name}: {field}")
    kind = doc["phase"]["kind"]
    if kind in ("sft", "grpo") and not doc["data"].get("train"):
        raise SpecError(f"{file.name}: data.train: a {kind} job needs training data (rollout-lab export writes it)")
    serve = doc.get("serve")
    return JobSpec(
        id=doc["id"],
        phase_name=doc["phase"]["name"],
        kind=kind,
        model=ModelSpec(
            base=model["base"],
            backend=model.get("backend", "transformers"),
            config=model.get("config"),
            adapter=model.get("adapter"),
            dtype=model.get("dtype", "auto"),
            servedName=model.get("servedName"),
        ),
        hyperparameters=resolve_hparams(kind, doc.get("hyperparameters") or {}),
        train=doc["data"].get("train"),
        manifest=doc["data"].get("manifest"),
        output_dir=(doc.get("output") or {}).get("dir", "out"),
        resources=doc.get("resources") or {},
        serve=ServeSpec(host=serve.get("host", "127.0.0.1"), port=int(serve.get("port", 8000))) if serve else None,
        env=list(doc.get("env") or []),
        command=list(doc["command"]),
        bundle_dir=file.parent,
    )
