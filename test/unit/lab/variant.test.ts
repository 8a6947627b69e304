import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { promptHash } from '../../../src/core/config/loader';
import { ConfigError, UsageError } from '../../../src/core/errors';
import { Lab } from '../../../src/core/lab/lab';
import { isBaseVariant, parseVariantSpec, variantSpec } from '../../../src/core/config/variantSpec';
import { resolveVariant } from '../../../src/core/lab/variant';

test('variant specs: base, models, stored prompt versions, files and labels', () => {
  assert.deepEqual(parseVariantSpec('base'), { label: 'base' });
  assert.deepEqual(parseVariantSpec(' base '), { label: 'base' });
  assert.equal(isBaseVariant(parseVariantSpec('base')), true);
  assert.deepEqual(parseVariantSpec('model:HypothesisRefiner=trained,model:ProtocolDesigner=trained,label:trained seniors'), {
    label: 'trained seniors',
    models: { HypothesisRefiner: 'trained', ProtocolDesigner: 'trained' },
  });
  assert.deepEqual(parseVariantSpec('prompt:Supervisor=3FA2c1, prompt:PeerReviewer=@prompts/v2 = draft.md'), {
    label: 'prompt:Supervisor=3FA2c1,prompt:PeerReviewer=@prompts/v2 = draft.md',
    prompts: { Supervisor: { version: '3FA2c1' }, PeerReviewer: { file: 'prompts/v2 = draft.md' } },
  });
  assert.deepEqual(parseVariantSpec('label:just a name'), { label: 'just a name' });
  for (const spec of ['base', 'model:A=m', 'model:A=m,label:x', 'prompt:A=@f.md,prompt:B=ab12']) {
    assert.deepEqual(parseVariantSpec(variantSpec(parseVariantSpec(spec))), parseVariantSpec(spec), `round trip of ${spec}`);
  }
  assert.equal(isBaseVariant(parseVariantSpec('model:A=m')), false);
});

test('variant specs that cannot be read fail with a usage error that says the form', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /empty variant spec/],
    ['   ', /empty variant spec/],
    ['trained', /cannot read "trained" — use model:AGENT=MODEL/],
    ['model:HypothesisRefiner', /cannot read "model:HypothesisRefiner"/],
    ['temperature:A=0.3', /cannot read "temperature:A=0.3"/],
    ['model: =x', /needs an agent before "=" and a value after it/],
    ['model:A=x,model:A=y', /the model of A is given twice/],
    ['prompt:A=@', /needs a file path after "@"/],
    ['label:', /"label:" needs a text/],
    ['base,model:A=x', /"base" stands alone/],
    [',', /changes nothing/],
  ];
  for (const [spec, re] of cases) {
    assert.throws(() => parseVariantSpec(spec), (e: unknown) => e instanceof UsageError && re.test(e.message) && !e.message.includes('\n'), `spec ${JSON.stringify(spec)}`);
  }
});

test('variants are checked against lab.json and the stored prompt versions, and change what an environment runs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-variant-'));
  await initWorkspace(dir);
  const labFile = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(labFile, 'utf8')) as { models: Record<string, unknown> };
  cfg.models.trained = { model: 'senior-grpo', version: 'grpo-step-200', temperature: 0.3 };
  writeFileSync(labFile, JSON.stringify(cfg, null, 2));
  writeFileSync(join(dir, 'alt.md'), 'You are the supervisor. Approve only protocols with a control group.\n');
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const supervisorText = readFileSync(join(dir, '.rollout-lab', 'prompts', 'Supervisor.md'), 'utf8');
    const stored = promptHash(supervisorText);
    lab.store.putPromptVersion({ hash: stored, agent: 'Supervisor', text: supervisorText, firstSeen: 1 });
    lab.store.putPromptVersion({ hash: 'ab12ffffffff', agent: 'Supervisor', text: 'one', firstSeen: 2 });
    lab.store.putPromptVersion({ hash: 'ab13ffffffff', agent: 'Supervisor', text: 'two', firstSeen: 3 });

    const errors: Array<[string, RegExp, typeof ConfigError | typeof UsageError]> = [
      ['model:Nobody=trained', /agent "Nobody", which is not under "agents".*\(agents: Geneticist, .*PrincipalInvestigator\)/, ConfigError],
      ['model:ProtocolDesigner=huge', /model "huge" for ProtocolDesigner is not under "models".*\(models: junior, supervisor, senior, strong, trained\)/, ConfigError],
      ['prompt:Supervisor=ab1', /prompt version "ab1" of Supervisor is ambiguous: ab12ffffffff, ab13ffffffff/, UsageError],
      ['prompt:Supervisor=ff00', /no stored prompt version of Supervisor starts with "ff00" \(stored versions: .*ab12ffff/, UsageError],
      ['prompt:Supervisor=xyz', /not a hex hash prefix/, UsageError],
      ['prompt:Supervisor=@missing.md', /prompt file .*missing\.md for Supervisor does not exist; paths are relative to the workspace/, UsageError],
    ];
    for (const [spec, re, kind] of errors) {
      await assert.rejects(resolveVariant(lab.loaded, lab.store, parseVariantSpec(spec)), (e: unknown) => e instanceof kind && re.test((e as Error).message), spec);
      await assert.rejects(lab.environment([], parseVariantSpec(spec)), kind, `environment() checks ${spec} too`);
    }

    const resolved = await resolveVariant(lab.loaded, lab.store, parseVariantSpec(`prompt:Supervisor=AB12,prompt:Geneticist=@alt.md,model:HypothesisRefiner=trained`));
    assert.deepEqual(resolved.prompts.get('Supervisor'), { text: 'one', hash: promptHash('one') });
    assert.equal(resolved.prompts.get('Geneticist')!.hash, promptHash(readFileSync(join(dir, 'alt.md'), 'utf8')));
    assert.equal(resolved.models.get('HypothesisRefiner'), 'trained');

    const base = await lab.environment([]);
    const env = await lab.environment([], parseVariantSpec('model:HypothesisRefiner=trained,prompt:Supervisor=@alt.md'));
    assert.deepEqual(base.versions.model('HypothesisRefiner'), { logical: 'senior', version: null });
    assert.deepEqual(env.versions.model('HypothesisRefiner'), { logical: 'trained', version: 'grpo-step-200' });
    assert.deepEqual(env.versions.model('ProtocolDesigner'), { logical: 'senior', version: null }, 'agents the variant leaves alone keep lab.json');
    assert.equal(base.versions.promptVersion('Supervisor'), stored);
    const altHash = promptHash(readFileSync(join(dir, 'alt.md'), 'utf8'));
    assert.equal(env.versions.promptVersion('Supervisor'), altHash);
    assert.equal(env.versions.promptVersion('Geneticist'), base.versions.promptVersion('Geneticist'));
    assert.equal(lab.store.getPromptVersion(altHash)?.agent, 'Supervisor', 'a variant prompt is stored as a version of its agent');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
