"""The job spec: YAML written by Rollout Lab, checked against the JSON Schema that its
zod schema generates (job_spec.schema.json), then for what a schema cannot say:
paths that stay inside the bundle, and hyper-parameter names and types per job kind.

The loaded spec is a tree of frozen dataclasses mirroring the schema, with the schema's
defaults filled in, so the trainer never reads a raw dict and never guesses a default."""

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from .errors import SpecError
from .hparams import HyperParameters, P, resolve_hparams

__all__ = ["JobSpec", "SpecError", "load_spec", "check_relative", "validate_document"]

SCHEMA_FILE = Path(__file__).with_name("job_spec.schema.json")
FIX_HINT = "Rollout Lab writes job.yaml from lab.json's training settings; fix it there (or in the bundle) and run again"


@dataclass(frozen=True)
class PhaseSpec:
    name: str
    kind: str  # sft | grpo | serve


@dataclass(frozen=True)
class ModelSpec:
    base: str
    backend: str = "transformers"
    config: dict[str, Any] | None = None
    adapter: str | None = None
    dtype: str = "auto"
    servedName: str | None = None


@dataclass(frozen=True)
class DataSpec:
    train: str | None
    manifest: str | None = None


@dataclass(frozen=True)
class OutputSpec:
    dir: str = "out"


@dataclass(frozen=True)
class ResourcesSpec:
    gpus: int = 1
    gpuType: str | None = None
    cpus: int | None = None
    memoryGb: float | None = None


@dataclass(frozen=True)
class ServeSpec:
    host: str = "127.0.0.1"
    port: int = 8000


@dataclass(frozen=True)
class JobSpec:
    """A loaded job spec. `kind` is the job kind (phase.kind), not the document's
    constant `kind: TrainingJob`, because that is what every caller branches on."""

    id: str
    phase: PhaseSpec
    model: ModelSpec
    hyperparameters: HyperParameters
    data: DataSpec
    output: OutputSpec
    resources: ResourcesSpec
    serve: ServeSpec | None
    env: list[str]
    command: list[str]
    bundle_dir: Path
    spec_file: Path = field(default=Path("job.yaml"))

    @property
    def kind(self) -> str:
        return self.phase.kind

    def params(self, of: type[P]) -> P:
        """The hyper-parameters as the record a job kind reads (SftParams, GrpoParams,
        ServeParams); SpecError when this spec's kind has other ones."""
        if not isinstance(self.hyperparameters, of):
            raise SpecError(f"phase.kind: a {self.kind} job has no {of.__name__} — run the job its kind names")
        return self.hyperparameters

    @property
    def train(self) -> str | None:
        return self.data.train

    @property
    def train_data(self) -> str:
        """data.train of a training job, which load_spec has checked an sft or grpo job names."""
        if not self.data.train:
            raise SpecError(f"data.train: a {self.kind} job needs training data — export it with `rollout-lab export` and name the file here")
        return self.data.train

    @property
    def manifest(self) -> str | None:
        return self.data.manifest

    @property
    def output_dir(self) -> str:
        """output.dir as written (bundle-relative): what events and result.json report."""
        return self.output.dir

    @property
    def out(self) -> Path:
        """output.dir on this machine."""
        return self.path(self.output.dir)

    @property
    def served_name(self) -> str:
        return self.model.servedName or self.id

    def path(self, rel: str) -> Path:
        """A bundle-relative path on this machine; absolute paths and '..' are refused
        so a spec can never read or write outside its bundle."""
        return self.bundle_dir / check_relative(rel, "path")

    def rel(self, p: Path) -> str:
        """The bundle-relative spelling of a path under the bundle (for events and result.json)."""
        try:
            return Path(p).resolve().relative_to(self.bundle_dir.resolve()).as_posix()
        except ValueError:
            return str(p)


class _Yaml12Loader(yaml.SafeLoader):
    """PyYAML reads YAML 1.1, where `5e-7` (no dot) is a string; the JavaScript `yaml`
    package that writes job.yaml emits YAML 1.2, where it is a number. Reading it as a
    string would reject the reference learning rate, so exponent floats resolve as floats."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def check_relative(rel: object, where: str) -> str:
    """rel if it is a relative path without '..'; SpecError naming `where` otherwise."""
    if not isinstance(rel, str) or not rel:
        raise SpecError(f"{where}: expected a path relative to the job bundle, got {rel!r}")
    parts = rel.replace("\\", "/").split("/")
    if rel.startswith(("/", "\\")) or os.path.isabs(rel) or (len(rel) > 1 and rel[1] == ":") or ".." in parts:
        raise SpecError(f"{where}: {rel!r} must be a path inside the job bundle (relative, without '..')")
    return rel


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def _where(path: Any) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def validate_document(doc: Any, name: str = "job.yaml") -> None:
    """Raises SpecError naming the first schema violation by its place in the document.

    Errors are sorted by path so the message is stable from run to run; a missing
    required field is reported at its parent (jsonschema's convention) with the
    field's name in the message."""
    errors = sorted(Draft202012Validator(_schema()).iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        e = errors[0]
        raise SpecError(f"{name}: {_where(e.absolute_path)}: {e.message} — {FIX_HINT}")


def load_spec(path: str) -> JobSpec:
    """Reads, validates and resolves a job spec; SpecError (exit 2) for anything wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such job spec — run in the job bundle, or pass --spec PATH") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the job spec ({exc.strerror})") from None
    try:
        doc = yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 — a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        raise SpecError(f"{file.name}{at}: not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if isinstance(doc, dict) and isinstance(doc.get("model"), dict) and doc["model"].get("backend") == "tiny":
        raise SpecError(f"{file.name}: model.backend: the tiny backend was removed — use backend transformers with model.config, a small model "
                        "built from a config (model_type qwen2, ...; training.trainer.modelConfig in lab.json), and write the bundle again")
    validate_document(doc, file.name)

    model = doc["model"]
    data = doc["data"]
    output = doc.get("output") or {}
    for where, value in (("data.train", data.get("train")), ("data.manifest", data.get("manifest")),
                         ("model.adapter", model.get("adapter")), ("output.dir", output.get("dir"))):
        if value is not None:
            check_relative(value, f"{file.name}: {where}")
    kind = doc["phase"]["kind"]
    if kind in ("sft", "grpo") and not data.get("train"):
        raise SpecError(f"{file.name}: data.train: a {kind} job needs training data — export it with `rollout-lab export` and name the file here")
    try:
        hp = resolve_hparams(kind, doc.get("hyperparameters") or {})
    except SpecError as exc:
        raise SpecError(f"{file.name}: {exc}") from None

    serve = doc.get("serve")
    res = doc.get("resources") or {}
    return JobSpec(
        id=doc["id"],
        phase=PhaseSpec(name=doc["phase"]["name"], kind=kind),
        model=ModelSpec(
            base=model["base"],
            backend=model.get("backend", "transformers"),
            config=model.get("config"),
            adapter=model.get("adapter"),
            dtype=model.get("dtype", "auto"),
            servedName=model.get("servedName"),
        ),
        hyperparameters=hp,
        data=DataSpec(train=data.get("train"), manifest=data.get("manifest")),
        output=OutputSpec(dir=output.get("dir", "out")),
        resources=ResourcesSpec(gpus=res.get("gpus", 1), gpuType=res.get("gpuType"), cpus=res.get("cpus"), memoryGb=res.get("memoryGb")),
        serve=ServeSpec(host=serve.get("host", "127.0.0.1"), port=int(serve.get("port", 8000))) if serve else None,
        env=list(doc.get("env") or []),
        command=list(doc["command"]),
        bundle_dir=file.resolve().parent,
        spec_file=file.resolve(),
    )
