import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { LabConfig } from '../config/schema';
import { ConfigError } from '../errors';
import { writeFileAtomic } from '../store/atomicFile';
import type { BanditLearner, LearnerJSON } from './learner';
import { learnerFromJSON } from './learners';

/*
 * Bandit policies on disk: one JSON file per version under
 * `.rollout-lab/<training.outputDir>/bandit/`, never rewritten, and
 * `active.json` naming the version in use plus the ones active before it (so
 * a rollback needs nothing but this file). Every write is atomic.
 */

export interface BanditPolicyInfo {
  version: string;
  algorithm: string;
  trainedAt: number;
  records: number;
  meanReward: number | null;
  file: string;
}

/** A feature slot's name, for showing the heaviest features: [slot, token, sign]. */
export type FeatureName = [number, string, 1 | -1];

export interface BanditPolicyDocument {
  format: typeof POLICY_FORMAT;
  version: string;
  algorithm: 'linucb' | 'logistic';
  trainedAt: number;
  records: number;
  meanReward: number | null;
  /** The agent whose choices the policy learnt (the Supervisor). */
  agent: string;
  featureNames: FeatureName[];
  learner: LearnerJSON;
}

export interface LoadedBanditPolicy {
  info: BanditPolicyInfo;
  learner: BanditLearner;
  featureNames: FeatureName[];
}

export const POLICY_FORMAT = 'rollout-lab.bandit-policy/1';
const VERSION_RE = /^bandit-(\d{4,})-([0-9a-f]{8})$/;
const ACTIVE_FILE = 'active.json';

const PolicyDoc = z.object({
  format: z.literal(POLICY_FORMAT),
  version: z.string().regex(VERSION_RE),
  algorithm: z.enum(['linucb', 'logistic']),
  trainedAt: z.number(),
  records: z.number().int().min(0),
  meanReward: z.number().nullable(),
  agent: z.string(),
  featureNames: z.array(z.tuple([z.number().int(), z.string(), z.union([z.literal(1), z.literal(-1)])])),
  learner: z.object({ algorithm: z.enum(['linucb', 'logistic']), dim: z.number().int().positive(), updates: z.number().int().min(0) }).passthrough(),
});

const ActiveDoc = z.object({ active: z.string().regex(VERSION_RE).nullable(), history: z.array(z.string().regex(VERSION_RE)) });
export type ActivePointer = z.output<typeof ActiveDoc>;

/** The folder of a workspace's bandit policies. */
export function banditDir(labDir: string, config: Pick<LabConfig, 'training'>): string {
  return resolve(labDir, config.training.outputDir, 'bandit');
}

export function isPolicyVersion(v: string): boolean {
  return VERSION_RE.test(v);
}

export function policySequence(version: string): number {
  return Number(VERSION_RE.exec(version)?.[1] ?? 0);
}

function corrupt(file: string, why: string): ConfigError {
  return new ConfigError(
    `bandit policy file ${file} is unreadable (${why}); train a new version with "rollout-lab bandit train" or activate another one`,
    file,
  );
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw corrupt(file, (err as Error).message);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw corrupt(file, `not JSON: ${(err as Error).message}`);
  }
}

function issueText(err: z.ZodError): string {
  const i = err.issues[0]!;
  return `${i.path.join('.') || '(top level)'}: ${i.message}`;
}

function readDocument(file: string): BanditPolicyDocument {
  const parsed = PolicyDoc.safeParse(readJson(file));
  if (!parsed.success) throw corrupt(file, issueText(parsed.error));
  return parsed.data as BanditPolicyDocument;
}

function infoOf(doc: BanditPolicyDocument, file: string): BanditPolicyInfo {
  return { version: doc.version, algorithm: doc.algorithm, trainedAt: doc.trainedAt, records: doc.records, meanReward: doc.meanReward, file };
}

export function policyFile(dir: string, version: string): string {
  return join(dir, `${version}.json`);
}

/** Versions on disk, oldest first (by sequence number). Reads only what it lists. */
export function policyVersionsOnDisk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json') && isPolicyVersion(f.slice(0, -5)))
    .map((f) => f.slice(0, -5))
    .sort((a, b) => policySequence(a) - policySequence(b) || a.localeCompare(b));
}

export function readPolicyInfo(dir: string, version: string): BanditPolicyInfo {
  const file = policyFile(dir, version);
  const doc = readDocument(file);
  if (doc.version !== version) throw corrupt(file, `it says it is version ${doc.version}`);
  return infoOf(doc, file);
}

/** A policy with its learner, ready to score; a damaged file is a ConfigError naming it. */
export function loadPolicy(dir: string, version: string): LoadedBanditPolicy {
  const file = policyFile(dir, version);
  if (!existsSync(file)) {
    throw new ConfigError(`bandit policy ${version} does not exist (no ${file}); run "rollout-lab bandit show" to list the versions`, file);
  }
  const doc = readDocument(file);
  if (doc.version !== version) throw corrupt(file, `it says it is version ${doc.version}`);
  let learner: BanditLearner;
  try {
    learner = learnerFromJSON(doc.learner);
  } catch (err) {
    throw corrupt(file, (err as Error).message);
  }
  return { info: infoOf(doc, file), learner, featureNames: doc.featureNames };
}

export function readActive(dir: string): ActivePointer {
  const file = join(dir, ACTIVE_FILE);
  if (!existsSync(file)) return { active: null, history: [] };
  const parsed = ActiveDoc.safeParse(readJson(file));
  if (!parsed.success) {
    throw new ConfigError(
      `${file} is unreadable (${issueText(parsed.error)}); it should be {"active": "bandit-0001-…" | null, "history": [...]} — fix it or activate a version again`,
      file,
    );
  }
  return parsed.data;
}

export function writeActive(dir: string, pointer: ActivePointer): void {
  mkdirSync(dir, { recursive: true });
  writeFileAtomic(join(dir, ACTIVE_FILE), Buffer.from(JSON.stringify(pointer, null, 2) + '\n'));
}

/**
 * Saves a new version: the next sequence number and 8 hex digits of the
 * content's hash (so two different policies never share an id, and a copied
 * file can be checked against its name).
 */
export function writePolicy(dir: string, body: Omit<BanditPolicyDocument, 'version' | 'format'>): BanditPolicyInfo {
  mkdirSync(dir, { recursive: true });
  const existing = policyVersionsOnDisk(dir);
  const seq = existing.length ? policySequence(existing[existing.length - 1]!) + 1 : 1;
  const content = JSON.stringify(body);
  const hash = createHash('sha256').update(content).digest('hex').slice(0, 8);
  const version = `bandit-${String(seq).padStart(4, '0')}-${hash}`;
  const doc: BanditPolicyDocument = { format: POLICY_FORMAT, version, ...body };
  const file = policyFile(dir, version);
  writeFileAtomic(file, Buffer.from(JSON.stringify(doc) + '\n'));
  return infoOf(doc, file);
}

/**
 * The policy the config asks for: `bandit.policy` "active" or a version id;
 * null when "active" names nothing. A damaged file is a ConfigError naming it.
 */
export function loadBanditPolicy(labDir: string, config: Pick<LabConfig, 'training' | 'bandit'>): LoadedBanditPolicy | null {
  const dir = banditDir(labDir, config);
  const wanted = config.bandit.policy === 'active' ? readActive(dir).active : config.bandit.policy;
  return wanted === null ? null : loadPolicy(dir, wanted);
}
