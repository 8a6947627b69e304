import type { TargetKind } from '../../../config/trainingSchema';
import type { Launcher } from '../launcher';
import { k8sLauncher } from './k8s';
import { localLauncher } from './local';
import { skypilotLauncher } from './skypilot';
import { slurmLauncher } from './slurm';
import { sshLauncher } from './ssh';

export { background, envLines, jobArgv, LineSplitter, pipe, remoteCommandLine, run, shellQuote, stream, type ExecOptions, type ExecResult } from './exec';
export { k8sLauncher, kubectl } from './k8s';
export { jobManifest, manifestsYaml, secretYaml, serviceManifest, type JobManifest, type SecretManifest, type ServiceManifest } from './k8sManifests';
export { localLauncher } from './local';
export { accepts, freePort } from './net';
export { clusterName, skyTask, skyTaskYaml, skypilotLauncher, type SkyTask } from './skypilot';
export { sbatchDirectives, sbatchScript, slurmExit, slurmJobDir, slurmLauncher, type SlurmReport } from './slurm';
export { remoteJobDir, sshArgv, sshLauncher } from './ssh';

const LAUNCHERS: Record<TargetKind, Launcher> = { local: localLauncher, ssh: sshLauncher, skypilot: skypilotLauncher, k8s: k8sLauncher, slurm: slurmLauncher };

/** The launcher of a target kind. */
export function launcherFor(kind: TargetKind): Launcher {
  return LAUNCHERS[kind];
}
