import { stringify } from 'yaml';
import type { TargetConfig } from '../../../config/trainingSchema';
import type { PreparedJob } from '../launcher';

/**
 * The Kubernetes objects of a job, typed by hand (only the fields used).
 *
 * How the bundle gets in and the outputs out, with nothing but kubectl and a
 * tar in the image: the pod shares an emptyDir at /workspace between an init
 * container, `wait-for-bundle`, that waits for /workspace/.bundle-ready, and
 * the trainer container. The launcher streams the bundle into the init
 * container (`kubectl exec -i job/ID -c wait-for-bundle -- tar -x`) and
 * touches the ready file; the trainer container then runs the job in
 * /workspace, prints a sentinel line with its exit status, and waits (up to
 * FETCH_WAIT_S) for /workspace/.fetched, so the outputs can be streamed out
 * (`kubectl exec job/ID -c trainer -- tar -c`) before the pod ends with the
 * job's status. Secrets become a Secret applied from stdin and reach the
 * container through envFrom; its data is never in k8s.yaml.
 */

export const WORKSPACE = '/workspace';
export const JOB_LABEL = 'rollout-lab/job';
export const INIT_CONTAINER = 'wait-for-bundle';
export const TRAINER_CONTAINER = 'trainer';
export const K8S_EXIT_MARK = '@@rollout-lab-exit ';
const WAIT_S = 3600;

interface ObjectMeta {
  name: string;
  labels?: Record<string, string>;
}

interface Container {
  name: string;
  image: string;
  command: string[];
  workingDir?: string;
  volumeMounts: Array<{ name: string; mountPath: string }>;
  resources?: { limits?: Record<string, string>; requests?: Record<string, string> };
  envFrom?: Array<{ secretRef: { name: string } }>;
  ports?: Array<{ name: string; containerPort: number }>;
}

export interface JobManifest {
  apiVersion: 'batch/v1';
  kind: 'Job';
  metadata: ObjectMeta;
  spec: {
    backoffLimit: number;
    ttlSecondsAfterFinished: number;
    template: {
      metadata: { labels: Record<string, string> };
      spec: {
        restartPolicy: 'Never';
        serviceAccountName?: string;
        nodeSelector?: Record<string, string>;
        volumes: Array<{ name: string; emptyDir: Record<string, never> }>;
        initContainers: Container[];
        containers: Container[];
      };
    };
  };
}

export interface ServiceManifest {
  apiVersion: 'v1';
  kind: 'Service';
  metadata: ObjectMeta;
  spec: { selector: Record<string, string>; ports: Array<{ name: string; port: number; targetPort: number }> };
}

export interface SecretManifest {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta;
  type: 'Opaque';
  stringData: Record<string, string>;
}

type K8sTarget = Extract<TargetConfig, { kind: 'k8s' }>;

// Waits for the launcher to copy the bundle in; gives up after an hour so a launch that died does not hold a GPU forever.
const INIT_SCRIPT = `i=0; until [ -f ${WORKSPACE}/.bundle-ready ]; do if [ "$i" -ge ${WAIT_S} ]; then echo "no bundle arrived in ${WAIT_S} s" >&2; exit 1; fi; sleep 1; i=$((i+1)); done`;

// The job's argv arrives as positional parameters. The trap passes a TERM (job deleted) on to the job; it is set
// before the job starts, so a TERM that comes as the job starts reaches it too, rather than killing the shell alone.
const TRAINER_SCRIPT = [
  `cd ${WORKSPACE} || exit 97`,
  `export PYTHONPATH="${WORKSPACE}/python-trainer\${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1`,
  // The image brings torch; the trainer's other libraries come with its package. Without a network the job still runs from source.
  'python3 -m pip install --quiet --disable-pip-version-check -e "./python-trainer[hf]" > /tmp/pip-install.log 2>&1 || echo "rollout-lab: installing python-trainer failed (see /tmp/pip-install.log in the pod); running it from source"',
  'trap \'stop=1; [ -z "$p" ] || kill -TERM "$p" 2>/dev/null\' TERM INT',
  'p=',
  '"$@" & p=$!',
  '[ -z "$stop" ] || kill -TERM "$p" 2>/dev/null',
  'wait "$p"; c=$?',
  'while kill -0 "$p" 2>/dev/null; do wait "$p"; c=$?; done',
  `echo "${K8S_EXIT_MARK}$c"`,
  `i=0; while [ -z "$stop" ] && [ ! -f ${WORKSPACE}/.fetched ] && [ "$i" -lt ${WAIT_S} ]; do sleep 1; i=$((i+1)); done`,
  'exit "$c"',
].join('\n');

export function jobLabels(id: string): Record<string, string> {
  return { 'app.kubernetes.io/name': 'rollout-lab-trainer', [JOB_LABEL]: id };
}

export function secretName(id: string): string {
  return `${id}-env`;
}

export function jobManifest(job: PreparedJob, t: K8sTarget): JobManifest {
  const id = job.spec.id;
  const r = job.spec.resources;
  const mount = [{ name: 'workspace', mountPath: WORKSPACE }];
  const limits: Record<string, string> = r.gpus > 0 ? { [t.gpuResource]: String(r.gpus) } : {};
  const requests: Record<string, string> = {};
  if (r.cpus) requests.cpu = String(r.cpus);
  if (r.memoryGb) requests.memory = `${r.memoryGb}Gi`;
  const trainer: Container = {
    name: TRAINER_CONTAINER,
    image: t.image,
    command: ['sh', '-c', TRAINER_SCRIPT, 'rollout-lab-job', ...job.spec.command],
    workingDir: WORKSPACE,
    volumeMounts: mount,
    ...(Object.keys(limits).length || Object.keys(requests).length
      ? { resources: { ...(Object.keys(limits).length ? { limits } : {}), ...(Object.keys(requests).length ? { requests } : {}) } }
      : {}),
    ...(Object.keys(job.secrets).length ? { envFrom: [{ secretRef: { name: secretName(id) } }] } : {}),
    ...(job.spec.serve ? { ports: [{ name: 'serve', containerPort: job.spec.serve.port }] } : {}),
  };
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: id, labels: jobLabels(id) },
    spec: {
      // One try: a failed training is reported, not repeated.
      backoffLimit: 0,
      ttlSecondsAfterFinished: 86_400,
      template: {
        metadata: { labels: jobLabels(id) },
        spec: {
          restartPolicy: 'Never',
          ...(t.serviceAccount ? { serviceAccountName: t.serviceAccount } : {}),
          ...(Object.keys(t.nodeSelector).length ? { nodeSelector: t.nodeSelector } : {}),
          volumes: [{ name: 'workspace', emptyDir: {} }],
          // The trainer's image has sh and tar, so no second image has to be pulled.
          initContainers: [{ name: INIT_CONTAINER, image: t.image, command: ['sh', '-c', INIT_SCRIPT], volumeMounts: mount }],
          containers: [trainer],
        },
      },
    },
  };
}

export function serviceManifest(job: PreparedJob): ServiceManifest | null {
  if (!job.spec.serve) return null;
  const id = job.spec.id;
  const port = job.spec.serve.port;
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: id, labels: jobLabels(id) }, spec: { selector: { [JOB_LABEL]: id }, ports: [{ name: 'serve', port, targetPort: port }] } };
}

/** What k8s.yaml holds: the Job and, for a serve job, its Service. */
export function manifestsYaml(job: PreparedJob, t: K8sTarget): string {
  const docs: Array<JobManifest | ServiceManifest> = [jobManifest(job, t)];
  const svc = serviceManifest(job);
  if (svc) docs.push(svc);
  return docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n');
}

/** The Secret, for `kubectl apply -f -` (values shown as *** in a plan). */
export function secretYaml(job: PreparedJob, mask: boolean): string {
  const id = job.spec.id;
  const names = Object.keys(job.secrets).sort();
  const secret: SecretManifest = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName(id), labels: jobLabels(id) },
    type: 'Opaque',
    stringData: Object.fromEntries(names.map((n) => [n, mask ? '***' : job.secrets[n]!])),
  };
  return stringify(secret, { lineWidth: 0 });
}
