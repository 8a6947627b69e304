"""Reads `sky launch` command lines the way SkyPilot's own CLI does, without a cloud or an API server.

Usage: python validate_sky.py sky launch -c CLUSTER TASK.yaml [FLAGS...]
       python validate_sky.py --cases CASES.json   (a list of {"argv": ["sky", "launch", ...], "env": {NAME: VALUE}})

Each argv goes through SkyPilot's click command (`sky.client.cli.command.cli`, what `sky` runs): its options are
parsed, the task YAML is checked against SkyPilot's task schema and turned into a `sky.Task` with the command line's
overrides (`--secret NAME` reads NAME from the environment, as on the user's machine; a case's env is added to it).
Where the CLI would hand the task to the API server (`sky.client.sdk.launch`), this script takes it instead, then
runs `Task.validate()`: what the client checks (the workdir, the file mounts) and what the server checks (the name,
the run section, the resources), less what needs the user's cloud setup. Skipped: the two lookups in SkyPilot's
cloud catalogs (downloaded from GitHub on first use), the accelerator names and the region/zone, and the cloud API's
answer on whether a machine image exists (and its size); where a task names no cloud, AWS, GCP and Azure count as
the clouds `sky check` enabled.

Nothing here may touch the network: sockets are refused before SkyPilot is imported, so an attempt fails the check.
Set HOME to a temporary folder: SkyPilot keeps its state in ~/.sky.

Prints one JSON line per command line: {"accepted": true, "task": what SkyPilot understood (the task's fields, its
resources, the launch options)} or {"accepted": false, "error": SkyPilot's message}; exits 1 when any is rejected.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from typing import Any, NoReturn


def _no_network(*args: Any, **_kwargs: Any) -> NoReturn:
    raise OSError(f'the SkyPilot check must not use the network (tried {args!r})')


socket.socket.connect = _no_network  # type: ignore[method-assign]
socket.socket.connect_ex = _no_network  # type: ignore[method-assign]
socket.create_connection = _no_network  # type: ignore[assignment]
socket.getaddrinfo = _no_network  # type: ignore[assignment]
os.environ['SKYPILOT_DISABLE_USAGE_COLLECTION'] = '1'

import click  # noqa: E402
from sky import check as sky_check  # noqa: E402
from sky import resources as resources_lib  # noqa: E402
from sky.client import sdk  # noqa: E402
from sky.client.cli.command import cli  # noqa: E402
from sky.utils import registry  # noqa: E402

USAGE = 'usage: validate_sky.py sky launch -c CLUSTER TASK.yaml [FLAGS...] | validate_sky.py --cases CASES.json'

# The two validations that look up SkyPilot's cloud catalogs (and Cloud.get_image_size, which asks the cloud's API).
CATALOG_CHECKS = ('_try_canonicalize_accelerators', '_try_validate_and_set_region_zone')
# The clouds taken as set up where a task names none (SkyPilot picks among those the user enabled with `sky check`).
ENABLED_CLOUDS = ('aws', 'gcp', 'azure')


class LaunchReached(Exception):  # noqa: N818 - no error: how the CLI's launch request is caught
    """The CLI reached the API server call: the task and the launch options are here."""

    def __init__(self, task: Any, options: dict[str, Any], params: dict[str, Any]) -> None:
        super().__init__('captured')
        self.task = task
        self.options = options
        self.params = params


def _capture_launch(task: Any, **options: Any) -> NoReturn:
    raise LaunchReached(task, options, dict(click.get_current_context().params))


def _resources(r: Any) -> dict[str, Any]:
    return {
        'cloud': str(r.cloud).lower() if r.cloud is not None else None,
        'region': r.region,
        'zone': r.zone,
        'accelerators': r.accelerators,
        'use_spot': r.use_spot,
        'image_id': r.image_id,
        'cpus': r.cpus,
        'memory': r.memory,
        'disk_size': r.disk_size,
        'ports': r.ports,
    }


def _skip_cloud_lookups() -> None:
    for name in CATALOG_CHECKS:
        if not callable(getattr(resources_lib.Resources, name, None)):
            raise SystemExit(f'sky.resources.Resources.{name} is gone: update validate_sky.py to this SkyPilot')
        setattr(resources_lib.Resources, name, lambda _self: None)
    for cloud in registry.CLOUD_REGISTRY.values():
        type(cloud).get_image_size = classmethod(lambda _cls, _image_id, _region: 0.0)  # type: ignore[method-assign]
    enabled = [registry.CLOUD_REGISTRY.from_str(name) for name in ENABLED_CLOUDS]
    sky_check.get_cached_enabled_clouds_or_refresh = lambda *_a, **_k: enabled
    sdk.launch = _capture_launch  # type: ignore[assignment]


def check_launch(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    if argv[:2] != ['sky', 'launch']:
        return {'accepted': False, 'error': f'not a `sky launch ...` command line: {argv!r}'}
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        # What the CLI prints on the way ("YAML to run: ...") goes to stderr: stdout is the verdicts'.
        with contextlib.redirect_stdout(sys.stderr):
            cli.main(args=argv[1:], prog_name='sky', standalone_mode=False)
    except LaunchReached as c:
        task, options, params = c.task, c.options, c.params
    except click.ClickException as e:
        return {'accepted': False, 'error': f'sky launch: {e.format_message()}'}
    except Exception as e:  # noqa: BLE001 - SkyPilot's own exceptions (ValueError, sky.exceptions.*) are its verdict
        return {'accepted': False, 'error': f'sky launch: {type(e).__name__}: {e}'}
    else:
        return {'accepted': False, 'error': 'sky launch ended without reaching the launch request'}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        task.validate()
    except Exception as e:  # noqa: BLE001 - as above
        return {'accepted': False, 'error': f'Task.validate: {type(e).__name__}: {e}'}
    return {
        'accepted': True,
        'task': {
            'name': task.name,
            'workdir': task.workdir,
            'setup': task.setup,
            'run': task.run,
            'envs': task.envs,
            # Names only: the values are the caller's.
            'secrets': sorted(task.secrets),
            'file_mounts': task.file_mounts,
            'num_nodes': task.num_nodes,
            'resources': sorted((_resources(r) for r in task.resources), key=lambda r: json.dumps(r, default=str)),
            'launch': {
                'cluster_name': options.get('cluster_name'),
                'idle_minutes_to_autostop': options.get('idle_minutes_to_autostop'),
                'down': options.get('down'),
                'need_confirmation': options.get('_need_confirmation'),
                'dryrun': options.get('dryrun'),
                'detach_run': params.get('detach_run'),
                'entrypoint': list(params.get('entrypoint') or ()),
            },
        },
    }


def main(args: list[str]) -> int:
    if args[:1] == ['--cases'] and len(args) == 2:
        with open(args[1], encoding='utf-8') as f:
            cases = [(c['argv'], c.get('env', {})) for c in json.load(f)]
    elif args[:2] == ['sky', 'launch']:
        cases = [(args, {})]
    else:
        print(USAGE, file=sys.stderr)
        return 2
    _skip_cloud_lookups()
    verdicts = [check_launch(argv, env) for argv, env in cases]
    for v in verdicts:
        print(json.dumps(v, default=str))
    return 0 if all(v['accepted'] for v in verdicts) else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
