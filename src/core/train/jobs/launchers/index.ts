import type { TargetKind } from '../../../config/trainingSchema';
import type { Launcher } from '../launcher';
import { k8sLauncher } from './k8s';
import { localLauncher } from './local';
import { skypilotLauncher } from './skypilot';
import { sshLauncher } from './ssh';

const LAUNCHERS: Record<TargetKind, Launcher> = { local: localLauncher, ssh: sshLauncher, skypilot: skypilotLauncher, k8s: k8sLauncher };

export function launcherFor(kind: TargetKind): Launcher {
  return LAUNCHERS[kind];
}
