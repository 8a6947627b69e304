import { parseArgs, type ParseArgsConfig } from 'node:util';
import { resolve } from 'node:path';
import { UsageError, errorMessage } from '../../core/errors';
import { COMMON, err, givenSplit, out } from '../args';
import { num } from '../../core/analysis/numberFormat';
import { table } from '../../core/analysis/textTable';

const OPTIONS = {
  workspace: COMMON.workspace,
  json: COMMON.json,
  help: COMMON.help,
  split: { type: 'string' },
  'include-simulated': { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

/**
 * rollout-lab bandit train|show: trains the Supervisor's contextual bandit
 * on the stored Supervisor decisions (the train split unless --split says
 * otherwise; simulated rollouts only with --include-simulated) and makes the
 * new version active, or shows the active policy, every version and its
 * heaviest features.
 */
export async function banditCommand(argv: string[], usage: string): Promise<number> {
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (e) {
    throw new UsageError(`bandit: ${errorMessage(e).replace(/\.$/, '')} — run \`rollout-lab bandit --help\` for the options`);
  }
  const v = parsed.values;
  if (v.help) return out(usage), 0;
  const [action, ...extra] = parsed.positionals;
  if (action !== 'train' && action !== 'show') throw new UsageError(`bandit: say what to do: train or show (got ${action === undefined ? 'nothing' : `"${action}"`})`);
  if (extra.length) throw new UsageError(`bandit ${action}: unexpected argument "${extra[0]}"`);
  const split = givenSplit(v, 'bandit');
  if (action === 'show' && (split !== undefined || v['include-simulated'])) throw new UsageError('bandit show: --split and --include-simulated apply to bandit train only');

  const { loadConfig } = await import('../../core/config/loader');
  const loaded = await loadConfig(resolve((v.workspace as string | undefined) ?? '.'));
  const { config, labDir } = loaded;
  const policyStore = await import('../../core/train/bandit/policyStore');

  if (action === 'train') {
    const { TraceStore } = await import('../../core/store/traceStore');
    const store = await TraceStore.open(loaded.workspaceDir, { readOnly: true });
    try {
      const info = await policyStore.trainBanditPolicy(store, config, labDir, { ...(split ? { split } : {}), includeSimulated: v['include-simulated'] === true });
      if (v.json) out(JSON.stringify({ ...info, active: true, mode: config.bandit.mode }, null, 2));
      else {
        out(
          `trained ${info.version} (${info.algorithm}) on ${info.records} Supervisor decision${info.records === 1 ? '' : 's'} (${info.split ?? 'all'} split${info.split ? '' : 's'}), mean reward ${num(info.meanReward)}; it is now the active policy`,
        );
        if (info.simulatedLeftOut) out(`${info.simulatedLeftOut} simulated rollouts left out (pass --include-simulated to use them)`);
        out(`file: ${info.file}`);
        if (config.bandit.mode === 'off') err('bandit.mode is "off": set it to "advise" or "decide" in .rollout-lab/lab.json for rollouts to use the policy');
      }
    } finally {
      await store.close();
    }
    return 0;
  }

  const { active, versions } = policyStore.listBanditPolicies(labDir, config);
  const { loadBanditPolicy } = await import('../../core/policy/policyFiles');
  const current = active ? loadBanditPolicy(labDir, { ...config, bandit: { ...config.bandit, policy: active } }) : null;
  const top = current ? policyStore.topFeatures(current, 10) : [];
  if (v.json) {
    out(JSON.stringify({ mode: config.bandit.mode, active, versions, topFeatures: top }, null, 2));
    return 0;
  }
  out(`bandit.mode: ${config.bandit.mode}; active policy: ${active ?? '(none)'}${config.bandit.policy !== 'active' ? `; lab.json pins ${config.bandit.policy}` : ''}`);
  if (!versions.length) {
    out('no policy trained yet: run rollouts, then "rollout-lab bandit train"');
    return 0;
  }
  out('');
  out(
    table(
      ['', 'Version', 'Algorithm', 'Trained', 'Records', 'Mean reward'],
      versions.map((p) => [p.version === active ? '*' : '', p.version, p.algorithm, new Date(p.trainedAt).toISOString(), String(p.records), num(p.meanReward)]),
    ),
  );
  if (top.length) {
    out('');
    out(`heaviest features of ${active}:`);
    out(table(['Feature', 'Weight'], top.map((f) => [f.feature, num(f.weight)])));
  }
  return 0;
}
