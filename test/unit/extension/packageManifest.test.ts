import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { listFiles, PackageManager } from '@vscode/vsce';

/**
 * What package.json promises a newcomer: commands that need a lab stay out of
 * the palette (and the view title bars) until one exists, a walkthrough whose
 * steps run real commands and tick off, the marketplace metadata, and a .vsix
 * that ships what the extension runs and nothing else.
 */

const REPO = path.resolve(__dirname, '../../..');

interface Command {
  command: string;
  title: string;
}
interface MenuEntry {
  command: string;
  when?: string;
}
interface Step {
  id: string;
  title: string;
  description: string;
  media: { markdown?: string };
  completionEvents?: string[];
}
interface Manifest {
  icon?: string;
  repository?: { type: string; url: string };
  categories?: string[];
  keywords?: string[];
  scripts: Record<string, string>;
  contributes: {
    commands: Command[];
    menus: Record<string, MenuEntry[]>;
    walkthroughs: Array<{ id: string; title: string; steps: Step[] }>;
  };
}

const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as Manifest;
const commands = pkg.contributes.commands.map((c) => c.command);

/** The commands that work in a folder without a lab: creating one, the walkthrough, keys and the standalone simulated endpoint. */
const WITHOUT_LAB = new Set(['rolloutLab.initialize', 'rolloutLab.openWalkthrough', 'rolloutLab.setApiKey', 'rolloutLab.startSimulatedEndpoint', 'rolloutLab.stopSimulatedEndpoint']);

/** Whether a when clause holds only where `rolloutLab.hasLab` does (it is one of its top-level && terms). */
const requiresLab = (when: string | undefined): boolean => when !== undefined && when.split('&&').some((t) => t.trim() === 'rolloutLab.hasLab');

/** Every `register('rolloutLab.…'` / `registerCommand('rolloutLab.…'` in the extension's sources. */
function registeredCommands(): Set<string> {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) for (const m of readFileSync(p, 'utf8').matchAll(/register(?:Command)?\(\s*'(rolloutLab\.[\w.]+)'/g)) found.add(m[1]!);
    }
  };
  walk(path.join(REPO, 'src', 'extension'));
  return found;
}

describe('package.json: commands before a lab exists', () => {
  it('every contributed command is registered by the extension, and every registered one is contributed', () => {
    const registered = registeredCommands();
    assert.deepEqual(commands.filter((c) => !registered.has(c)), [], 'contributed but never registered');
    assert.deepEqual([...registered].filter((c) => !commands.includes(c)).sort(), [], 'registered but not contributed');
  });

  it('the palette offers only the commands that work without a lab until rolloutLab.hasLab is set', () => {
    const palette = new Map(pkg.contributes.menus.commandPalette!.map((e) => [e.command, e.when]));
    const shownWithoutLab = commands.filter((c) => {
      const when = palette.get(c);
      return when !== 'false' && !requiresLab(when);
    });
    assert.deepEqual(shownWithoutLab.sort(), [...WITHOUT_LAB].sort());
    // The ones that stay are not hidden behind a lab by mistake.
    for (const c of WITHOUT_LAB) assert.ok(!requiresLab(palette.get(c)), `${c} works without a lab`);
  });

  it('the views\' title bars show a lab-needing command only once a lab exists', () => {
    const offenders = pkg.contributes.menus['view/title']!.filter((e) => !WITHOUT_LAB.has(e.command) && !requiresLab(e.when));
    assert.deepEqual(offenders, []);
  });
});

describe('package.json: the Get Started walkthrough', () => {
  const walkthrough = pkg.contributes.walkthroughs.find((w) => w.id === 'gettingStarted');
  const contextKeys = [...readFileSync(path.join(REPO, 'src/extension/contextKeys.ts'), 'utf8').matchAll(/'(rolloutLab\.\w+)'/g)].map((m) => m[1]!);

  it('is the one the Get Started command opens (src/extension/extension.ts names it)', () => {
    assert.ok(walkthrough, 'contributes.walkthroughs has gettingStarted');
    assert.match(readFileSync(path.join(REPO, 'src/extension/extension.ts'), 'utf8'), /const WALKTHROUGH = 'gettingStarted';/);
  });

  it('walks from initializing to a training dry run, each step with a button that runs a contributed command', () => {
    assert.deepEqual(walkthrough!.steps.map((s) => s.id), ['initialize', 'runRollouts', 'openTrace', 'evaluate', 'rewardWeights', 'train']);
    const buttons = walkthrough!.steps.map((s) => [...s.description.matchAll(/\]\(command:([\w.]+)(?:\?([^)]*))?\)/g)].map((m) => ({ command: m[1]!, arg: m[2] ? JSON.parse(decodeURIComponent(m[2])) : undefined })));
    for (const [i, links] of buttons.entries()) {
      assert.ok(links.length > 0, `step ${walkthrough!.steps[i]!.id} has a button`);
      for (const l of links) assert.ok(commands.includes(l.command), `${l.command} is contributed`);
    }
    // Initialize: the sample data, or the user's own graph module (src/extension/commands/initializeLab.ts reads these arguments).
    assert.deepEqual(buttons[0], [
      { command: 'rolloutLab.initialize', arg: 'research-lab' },
      { command: 'rolloutLab.initialize', arg: 'own-graph' },
    ]);
    assert.match(readFileSync(path.join(REPO, 'src/extension/commands/initializeLab.ts'), 'utf8'), /PICK_OWN_GRAPH = 'own-graph'/);
    assert.deepEqual(buttons.slice(1).map((l) => l[0]!.command), ['rolloutLab.runRollouts', 'rolloutLab.openTraceExplorer', 'rolloutLab.evaluate', 'rolloutLab.openRewardWeights', 'rolloutLab.launchTrainingPhase']);
  });

  it('ticks each step off on a contributed command or a context key the extension sets', () => {
    for (const step of walkthrough!.steps) {
      assert.ok(step.completionEvents?.length, `step ${step.id} has completion events`);
      for (const e of step.completionEvents!) {
        const [kind, what] = [e.slice(0, e.indexOf(':')), e.slice(e.indexOf(':') + 1)];
        if (kind === 'onCommand') assert.ok(commands.includes(what), `${step.id}: ${what} is contributed`);
        else if (kind === 'onContext') assert.ok(contextKeys.includes(what), `${step.id}: ${what} is a key src/extension/contextKeys.ts sets`);
        else assert.fail(`${step.id}: unexpected completion event ${e}`);
      }
    }
    assert.deepEqual(walkthrough!.steps[0]!.completionEvents, ['onContext:rolloutLab.hasLab']);
    assert.deepEqual(walkthrough!.steps[1]!.completionEvents, ['onContext:rolloutLab.hasRollouts']);
  });

  it('each step shows a page of media/walkthrough/', () => {
    for (const step of walkthrough!.steps) {
      const md = step.media.markdown;
      assert.match(md ?? '', /^media\/walkthrough\/\w+\.md$/, `${step.id} has a markdown page`);
      const text = readFileSync(path.join(REPO, md!), 'utf8');
      assert.match(text, /^# \S/, `${md} starts with a heading`);
    }
  });
});

describe('package.json: marketplace metadata and packaging', () => {
  it('has a 128×128 PNG icon, a repository, categories and keywords', () => {
    const png = readFileSync(path.join(REPO, pkg.icon!));
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [128, 128]);
    assert.deepEqual(pkg.repository, { type: 'git', url: 'https://github.com/rollout-lab/rollout-lab' });
    assert.ok(pkg.categories?.includes('Machine Learning'));
    assert.ok((pkg.keywords?.length ?? 0) > 0 && pkg.keywords!.length <= 30, 'the marketplace takes at most 30 keywords');
  });

  it('npm run package packages per platform (scripts/packageVsix.mjs runs vsce package --target), with no --allow-missing-repository', () => {
    assert.equal(pkg.scripts.package, 'node scripts/packageVsix.mjs');
    const script = readFileSync(path.join(REPO, 'scripts/packageVsix.mjs'), 'utf8');
    assert.match(script, /'package', '--target', target/);
    assert.doesNotMatch(JSON.stringify(pkg.scripts) + script, /allow-missing-repository/);
  });

  describe('.vscodeignore, as vsce applies it', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'rollout-lab-vscodeignore-'));
    after(() => rmSync(root, { recursive: true, force: true }));
    // A tree shaped like the repository's: what ships, and what must stay behind.
    const ships = [
      'package.json',
      'README.md',
      'LICENSE',
      'dist/extension.js',
      'dist/cli.js',
      'dist/sql-wasm.wasm',
      'dist/webview/traceExplorer.js',
      'media/rollout-lab-icon.png',
      'media/walkthrough/initialize.md',
      'media/lab.schema.json',
      'bin/rollout-lab.js',
      'python-trainer/rollout_trainer/sft.py',
      // The sample dataset a new lab runs on when no dataset is given.
      'data/pubmedqa-sample/ori_pqal.json',
      'data/pubmedqa-sample/LICENSE',
    ];
    const staysBehind = [
      'dist/extension.js.map',
      'media/rollout-lab-icon.svg',
      'src/extension/extension.ts',
      'test/unit/extension/packageManifest.test.ts',
      'test/fixtures/tasks.jsonl',
      'python-trainer/tests/test_sft.py',
      'python-trainer/rollout_trainer/__pycache__/sft.cpython-311.pyc',
      '.cache/code-server/package.json',
      'test-results/ui/walkthrough-dark.png',
      'bench/run.ts',
      'examples/graphs/x.ts',
      'scripts/packageVsix.mjs',
      'rollout-lab-0.1.0-linux-x64.vsix',
    ];

    it('lets in the bundles, media, walkthrough pages, icon and a top-level data/ folder, and nothing of tests, sources or caches', async () => {
      for (const f of [...ships, ...staysBehind]) {
        mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
        writeFileSync(path.join(root, f), f === 'package.json' ? readFileSync(path.join(REPO, 'package.json')) : `${f}\n`);
      }
      writeFileSync(path.join(root, '.vscodeignore'), readFileSync(path.join(REPO, '.vscodeignore')));
      const listed = (await listFiles({ cwd: root, packageManager: PackageManager.None })).map((f) => f.split(path.sep).join('/')).sort();
      assert.deepEqual(listed, [...ships].sort());
    });
  });
});
