import { z } from 'zod';

/** Where `run --workers N --on PLACE` can start workers. */
export const WORKER_PLACES = ['local', 'slurm', 'k8s', 'skypilot'] as const;
export type WorkerPlaceName = (typeof WORKER_PLACES)[number];

/** A Slurm time limit as sbatch --time takes it. */
export const slurmTime = z
  .string()
  .regex(/^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}){0,2})$/, 'a Slurm time: MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS');

/** Characters safe on an #SBATCH line: no spaces, no shell or option syntax. */
export const slurmWord = z.string().regex(/^[A-Za-z0-9_.,-]+$/, 'letters, digits, "_", "-", "." or ","');

const shellLines = z.array(z.string().regex(/^[^\n\r]*$/, 'one shell line each (no line breaks)'));

/** `run --workers N --on slurm`: one job array, a task per slice, on this machine's Slurm (run it on a login node). */
export const SlurmWorkersSchema = z.strictObject({
  partition: slurmWord.optional().describe('sbatch --partition of the array.'),
  account: slurmWord.optional().describe('sbatch --account.'),
  qos: slurmWord.optional().describe('sbatch --qos.'),
  timeLimit: slurmTime.optional().describe('sbatch --time of each array task, e.g. "2:00:00". A task that reaches it ends; resume the run to finish its slice.'),
  cpus: z.number().int().min(1).default(1).describe('CPUs per worker (--cpus-per-task): rollouts mostly wait on the model, so one is enough for a concurrency of dozens.'),
  memoryGb: z.number().positive().optional().describe('Memory per worker (--mem).'),
  setup: shellLines
    .default([])
    .describe('Shell lines each task runs before the worker, e.g. "module load nodejs/20"; the first that fails ends the task.'),
  sbatchOptions: z
    .array(z.string().regex(/^--[a-z][a-z0-9-]*(=\S+)?$/, 'an sbatch long option such as --constraint=cpu or --exclusive'))
    .default([])
    .describe('Extra sbatch options, one "--name=value" each. Those the workers set themselves (--array, --output, --requeue, ...) are refused.'),
  cli: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('How the compute nodes start Rollout Lab\'s CLI (after setup), e.g. ["rollout-lab"] or ["node", "/shared/rollout-lab/dist/cli.js"]. Default: the node and the CLI this coordinator runs, at the same paths.'),
  pollSeconds: z.number().min(0.2).max(600).default(5).describe('How often the coordinator asks scontrol about the array.'),
});

/** A DNS-1123 label: what Kubernetes accepts as the name of a claim, a Secret, a service account, a namespace. */
const k8sName = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a Kubernetes name: lowercase letters, digits and "-", starting and ending with a letter or digit').max(63);
/** A Kubernetes resource quantity: "500m", "2", "1.5", "512Mi", "4Gi". */
const quantity = z.string().regex(/^\d+(\.\d+)?(m|k|Ki|M|Mi|G|Gi|T|Ti)?$/, 'a Kubernetes quantity such as "500m", "2", "512Mi" or "4Gi"');
const absolutePath = z.string().regex(/^\/[^\s:]*$/, 'an absolute path without spaces or ":"');
const envMap = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string());
const pollSeconds = (tool: string) => z.number().min(0.2).max(600).default(5).describe(`How often the coordinator asks ${tool} about the workers.`);

/**
 * `run --workers N --on k8s`: one Indexed Job, a pod per slice. The image and
 * the workspace's claim have no default: they are checked when the workers start.
 */
export const K8sWorkersSchema = z.strictObject({
  context: z.string().min(1).optional().describe('kubectl --context (default: the current one).'),
  namespace: k8sName.default('default').describe('Namespace of the Job and its pods.'),
  image: z.string().min(1).optional().describe('Container image with Node 20 and Rollout Lab\'s CLI (required).'),
  cli: z.array(z.string().min(1)).min(1).default(['rollout-lab']).describe('The command that starts Rollout Lab\'s CLI in the image, e.g. ["rollout-lab"] or ["node", "/app/dist/cli.js"].'),
  workspace: z
    .strictObject({
      claim: k8sName.optional().describe('The PersistentVolumeClaim every pod mounts (required). It must be ReadWriteMany, and the same files as the workspace the coordinator runs in (an NFS/EFS/Filestore share mounted here too): the workers write into its store, the coordinator reads their progress from it.'),
      mountPath: absolutePath.default('/workspace').describe('Where the claim is mounted in the pod: the workspace the workers open.'),
      subPath: z.string().regex(/^[^/\s][^\s]*$/, 'a relative path inside the claim').optional().describe('The workspace\'s folder inside the claim, when it is not the claim\'s root.'),
    })
    .prefault({}),
  cpu: quantity.default('1').describe('CPU each worker pod requests: rollouts mostly wait on the model, so one is enough for a concurrency of dozens.'),
  memory: quantity.default('1Gi').describe('Memory each worker pod requests (and is limited to).'),
  nodeSelector: z.record(z.string(), z.string()).default({}).describe('Node labels the pods must run on.'),
  serviceAccount: k8sName.optional().describe('The pods\' service account.'),
  envFromSecrets: z.array(k8sName).default([]).describe('Secrets whose keys become the workers\' environment (envFrom), e.g. one holding OPENAI_API_KEY: the values stay in the cluster, never in the manifest.'),
  env: envMap.default({}).describe('Plain (not secret) environment variables of the workers.'),
  retriesPerIndex: z.number().int().min(0).max(10).default(2).describe('How many times a slice\'s failed pod is replaced (backoffLimitPerIndex); each retry redoes only the slice\'s unfinished rollouts. An eviction or preemption is not counted, a usage error (exit 2) is not retried.'),
  pollSeconds: pollSeconds('kubectl'),
});

/** `run --workers N --on skypilot`: one task on N nodes, each running the slice of its node rank. */
export const SkypilotWorkersSchema = z.strictObject({
  cluster: z.string().regex(/^[a-z]([a-z0-9-]*[a-z0-9])?$/, 'a SkyPilot cluster name: lowercase letters, digits and "-"').optional().describe('Cluster name (default: one per run, rl-w-RUN).'),
  cloud: z.string().min(1).optional().describe('aws, gcp, azure, kubernetes, ... (default: the cheapest SkyPilot finds).'),
  region: z.string().min(1).optional(),
  image: z.string().min(1).optional().describe('image_id, e.g. docker:node:20-bookworm (the nodes need Node 20 and Rollout Lab\'s CLI, or setup lines that install them).'),
  cpus: z.number().int().min(1).default(2).describe('CPUs per node (at least).'),
  useSpot: z.boolean().default(false).describe('Spot nodes: a node taken back ends its slice\'s worker, and SkyPilot then stops the others; resume the run to finish.'),
  setup: shellLines.default([]).describe('Shell lines each node runs once before the workers, e.g. "npm install -g rollout-lab".'),
  cli: z.array(z.string().min(1)).min(1).default(['rollout-lab']).describe('The command that starts Rollout Lab\'s CLI on the nodes (after setup).'),
  workspace: z
    .strictObject({
      path: absolutePath.default('/workspace').describe('The workspace on every node.'),
      bucket: z
        .string()
        .regex(/^(s3|gs|r2|cos|oci|https):\/\/\S+$/, 'a bucket URL such as s3://my-bucket/lab or gs://my-bucket/lab')
        .optional()
        .describe('A bucket SkyPilot mounts at path on every node (file_mounts, mode MOUNT_CACHED: the store appends to its journals, which MOUNT mode cannot do). It must hold this workspace, the one the coordinator reads (mount it here too, e.g. with rclone); writes reach the other nodes and the coordinator after rclone uploads them.'),
      sharedFilesystem: z.boolean().default(false).describe('Set instead of bucket when path is already a filesystem every node and this machine share (NFS mounted by the image or the setup lines).'),
    })
    .prefault({}),
  envs: envMap.default({}).describe('Plain environment variables of the workers (the task\'s envs).'),
  secrets: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')).default([]).describe('Environment variables (API keys) passed as `sky launch --secret NAME` from the coordinator\'s environment: SkyPilot redacts them, the task YAML holds only their names.'),
  down: z.boolean().default(true).describe('Tear the cluster down once every worker has ended (and after a cancel).'),
  pollSeconds: pollSeconds('sky queue'),
});

export const WorkersSchema = z
  .strictObject({
    slurm: SlurmWorkersSchema.prefault({}),
    k8s: K8sWorkersSchema.prefault({}),
    skypilot: SkypilotWorkersSchema.prefault({}),
  })
  .describe('Where `rollout-lab run --workers N --on PLACE` starts its workers. Every worker reads and writes this workspace, so on a cluster it must sit on a filesystem all nodes mount.');

export type WorkersConfig = z.output<typeof WorkersSchema>;
export type SlurmWorkersConfig = z.output<typeof SlurmWorkersSchema>;
export type K8sWorkersConfig = z.output<typeof K8sWorkersSchema>;
export type SkypilotWorkersConfig = z.output<typeof SkypilotWorkersSchema>;
