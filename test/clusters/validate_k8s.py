"""Checks Kubernetes manifests against the API types of the official Python client (package `kubernetes`).

Usage: python validate_k8s.py FILE.yaml [FILE.yaml...]   (each file may hold several documents, split by ---)

Each document's apiVersion and kind name its model (batch/v1 Job: kubernetes.client.V1Job; v1 Service:
V1Service). The manifest is walked against the model's `attribute_map` (JSON key -> attribute) and `openapi_types`
(attribute -> type: str, int, bool, List[...], Dict[str, ...], a nested model): a key the type does not have, a value
of the wrong type and a required field left out are each an error, with the path to it. Then the model's own
`from_dict` (pydantic, strict types) must accept the document too.

Prints one JSON line per file: {"file", "accepted", "objects": [{"apiVersion", "kind", "name", "model"}...],
"errors": [...]} (an error starts with the document's index, #0 for the first, and the path to the value);
exits 1 when any file is rejected.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import kubernetes.client
import pydantic
import yaml

USAGE = 'usage: validate_k8s.py FILE.yaml [FILE.yaml...]'

# The JSON types of the client's primitive type names; `object` is an IntOrString or free-form value.
PRIMITIVES: dict[str, tuple[type, ...]] = {
    'str': (str,),
    'int': (int,),
    'float': (int, float),
    'bool': (bool,),
    'datetime': (str,),
    'date': (str,),
    'bytes': (str,),  # base64 in JSON
    'object': (str, int, float, bool, dict, list),
}


def model_for(api_version: Any, kind: Any) -> Any:
    """V1Job for batch/v1 Job, V1Service for v1 Service: the client names its models after the version and kind."""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    version = api_version.rsplit('/', 1)[-1]
    return getattr(kubernetes.client, f'{version[:1].upper()}{version[1:]}{kind}', None)


def check(value: Any, type_name: str, path: str, errors: list[str]) -> None:
    if value is None:
        return  # an explicit null is an absent optional field; required ones are checked by their model
    if type_name.startswith('List[') and type_name.endswith(']'):
        if not isinstance(value, list):
            errors.append(f'{path}: a list ({type_name}) is wanted, not {json.dumps(value)}')
            return
        for i, item in enumerate(value):
            check(item, type_name[5:-1], f'{path}[{i}]', errors)
    elif type_name.startswith('Dict[str, ') and type_name.endswith(']'):
        if not isinstance(value, dict):
            errors.append(f'{path}: a map ({type_name}) is wanted, not {json.dumps(value)}')
            return
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(f'{path}: the key {key!r} is not a string')
            check(item, type_name[10:-1], f'{path}.{key}', errors)
    elif type_name in PRIMITIVES:
        wanted = PRIMITIVES[type_name]
        # YAML's true/false are no numbers to the API server.
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            errors.append(f'{path}: {type_name} is wanted, not {json.dumps(value)}')
    else:
        model = getattr(kubernetes.client, type_name, None)
        if model is None:
            errors.append(f'{path}: the client has no type {type_name} (update validate_k8s.py for it)')
            return
        check_model(value, model, path, errors)


def check_model(value: Any, model: Any, path: str, errors: list[str]) -> None:
    name = model.__name__
    if not isinstance(value, dict):
        errors.append(f'{path}: an object ({name}) is wanted, not {json.dumps(value)}')
        return
    attribute_map: dict[str, str] = model.attribute_map
    openapi_types: dict[str, str] = model.openapi_types
    by_key = {key: attr for attr, key in attribute_map.items()}
    for key, item in value.items():
        attr = by_key.get(key)
        if attr is None:
            errors.append(f'{path}.{key}: {name} has no field "{key}" (its fields: {", ".join(sorted(by_key))})')
        else:
            check(item, openapi_types[attr], f'{path}.{key}', errors)
    fields: dict[str, Any] = model.model_fields
    for attr, field in fields.items():
        key = attribute_map.get(attr, attr)
        if field.is_required() and value.get(key) is None:
            errors.append(f'{path}.{key}: {name} requires it')


def check_document(doc: Any, where: str, errors: list[str]) -> dict[str, Any] | None:
    if not isinstance(doc, dict):
        errors.append(f'{where}: a manifest is an object, not {json.dumps(doc)}')
        return None
    model = model_for(doc.get('apiVersion'), doc.get('kind'))
    if model is None:
        api_version, kind = doc.get('apiVersion'), doc.get('kind')
        errors.append(f'{where}: the client has no type for apiVersion {api_version!r}, kind {kind!r}')
        return None
    before = len(errors)
    check_model(doc, model, where, errors)
    name = (doc.get('metadata') or {}).get('name')
    if not name:
        errors.append(f'{where}.metadata.name: kubectl apply needs a name')
    if len(errors) == before:
        try:
            model.from_dict(doc)
        except pydantic.ValidationError as e:
            errors.append(f'{where}: {model.__name__}.from_dict rejects it: {e}')
    return {'apiVersion': doc['apiVersion'], 'kind': doc['kind'], 'name': name, 'model': model.__name__}


def check_file(file: str) -> dict[str, Any]:
    errors: list[str] = []
    objects: list[dict[str, Any]] = []
    with open(file, encoding='utf-8') as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    if not docs:
        errors.append(f'{file}: no manifest in it')
    for i, doc in enumerate(docs):
        summary = check_document(doc, f'#{i}', errors)
        if summary:
            objects.append(summary)
    return {'file': file, 'accepted': not errors, 'objects': objects, 'errors': errors}


def main(files: list[str]) -> int:
    if not files:
        print(USAGE, file=sys.stderr)
        return 2
    verdicts = [check_file(file) for file in files]
    for v in verdicts:
        print(json.dumps(v))
    return 0 if all(v['accepted'] for v in verdicts) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
