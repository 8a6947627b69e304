import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as langgraph from '@langchain/langgraph';
import { ConfigError } from '../../../src/core/errors';
import { loadUserModule } from '../../../src/core/graph/userModule';
import { loadCustomReward } from '../../../src/core/reward/customReward';

const FIXTURE = join(__dirname, '..', '..', 'fixtures', 'user-module');
const REPO_MODULES = join(__dirname, '..', '..', '..', 'node_modules');

/**
 * A copy of the fixture module in a temp folder (outside this repository, so
 * nothing resolves from the lab's own node_modules by accident), with its
 * packages installed in the copy's node_modules.
 */
function installFixture(root: string): string {
  const dir = join(root, 'mod');
  cpSync(join(FIXTURE, 'module'), dir, { recursive: true });
  cpSync(join(FIXTURE, 'packages'), join(dir, 'node_modules'), { recursive: true });
  return dir;
}

describe('user modules import packages from their own folder', () => {
  let root: string;
  let dir: string;
  let report: Record<string, any>;
  before(async () => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'rl-usermodule-')));
    dir = installFixture(root);
    const exports = await loadUserModule(join(dir, 'index.ts'), 'graph module');
    report = exports.report as Record<string, any>;
    report.StateGraph = exports.StateGraph;
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('loads a package installed beside the module, which reads a file next to its own code', () => {
    assert.equal(report.greeting, 'hello from beside the package');
    assert.equal(report.greetingFile, join(dir, 'node_modules', 'asset-reader', 'greeting.txt'));
  });

  it('gives the module require.resolve and createRequire(import.meta.url), resolving from its folder', () => {
    const pkg = join(dir, 'node_modules', 'asset-reader', 'index.js');
    assert.equal(report.resolved, pkg);
    assert.equal(report.resolvedViaMeta, pkg);
  });

  it('gives each source file its own import.meta.url, __dirname and __filename, as Node does', () => {
    const entry = join(dir, 'index.ts');
    assert.deepEqual(report.entry, { url: pathToFileURL(entry).href, dirname: dir, filename: entry });
    const helper = join(dir, 'lib', 'where.ts');
    assert.deepEqual(report.helper, { url: pathToFileURL(helper).href, dirname: dirname(helper), filename: helper, fromUrl: dirname(helper) });
  });

  it('loads an ESM-only package with top-level await (default and named exports)', () => {
    assert.equal(report.shouted, 'PACKAGES!');
    assert.equal(report.esmAnswer, 42);
  });

  it('keeps LangGraph the lab\'s own even when the module\'s folder has another copy', () => {
    assert.equal(report.StateGraph, langgraph.StateGraph);
  });
});

describe('user module package errors', () => {
  let root: string;
  before(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'rl-usermodule-err-')));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('names a missing package, the line importing it and the npm install that fixes it', async () => {
    const dir = join(root, 'missing');
    mkdirSync(join(dir, 'lib'), { recursive: true });
    writeFileSync(join(dir, 'graph.ts'), "import { helper } from './lib/helper';\nexport default helper;\n");
    writeFileSync(join(dir, 'lib', 'helper.ts'), "export const x = 1;\nimport initSqlJs from 'sql.js';\nexport const helper = initSqlJs;\n");
    await assert.rejects(loadUserModule(join(dir, 'graph.ts'), 'graph module'), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.ok(!e.message.includes('\n'), 'one line');
      assert.match(e.message, /lib\/helper\.ts:2:\d+: package "sql\.js" \(imported by lib\/helper\.ts\) is not installed/);
      assert.ok(e.message.includes(`run \`npm install sql.js\` in ${dir}`), e.message);
      return true;
    });
  });

  it('says which LangChain entry points are shared when a module asks for another one that is not installed', async () => {
    const dir = join(root, 'shared');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'graph.ts'), "import { x } from '@langchain/core/not_shared';\nexport default x;\n");
    await assert.rejects(loadUserModule(join(dir, 'graph.ts'), 'graph module'), /"@langchain\/core\/not_shared".*not one of the entry points Rollout Lab shares \(@langchain\/langgraph, .*zod/);
  });

  it('runs a custom reward that opens the real sql.js installed beside it (its wasm found beside sql.js)', async () => {
    const dir = join(root, 'sql');
    const sqljs = join(dir, 'node_modules', 'sql.js');
    mkdirSync(join(sqljs, 'dist'), { recursive: true });
    for (const f of ['package.json', 'dist/sql-wasm.js', 'dist/sql-wasm.wasm']) cpSync(join(REPO_MODULES, 'sql.js', f), join(sqljs, f));
    writeFileSync(
      join(dir, 'reward.ts'),
      [
        "import initSqlJs from 'sql.js';",
        'const SQL = initSqlJs();',
        'async function rows(sql: string): Promise<string> {',
        '  const db = new (await SQL).Database();',
        "  db.run(\"CREATE TABLE book (title TEXT); INSERT INTO book VALUES ('Dune'), ('Emma');\");",
        '  try { return JSON.stringify(db.exec(sql).map((r) => r.values)); } catch { return "error"; } finally { db.close(); }',
        '}',
        'export default async function reward({ task, outcome }: { task: { expected: unknown }; outcome: { finalOutput: string | null } }): Promise<number> {',
        '  return (await rows(outcome.finalOutput ?? "")) === (await rows(String(task.expected))) ? 1 : 0;',
        '}',
      ].join('\n'),
    );
    const custom = await loadCustomReward(join(dir, 'reward.ts'));
    const input = (sql: string) => ({
      task: { id: 't1', goal: 'How many books?', context: '', expected: 'SELECT count(*) FROM book', expectedDecision: null, meta: {} },
      outcome: { finalOutput: sql, decision: null, turns: 1, failures: [] },
      spans: [],
      judge: async () => ({ scores: {}, failed: true, reward: 0 }),
    });
    assert.deepEqual(await custom.evaluate(input('SELECT COUNT(title) FROM book')), { ok: true, reward: 1, breakdown: {} });
    assert.deepEqual(await custom.evaluate(input('SELECT title FROM book')), { ok: true, reward: 0, breakdown: {} });
  });
});
