import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenAIStub } from '../fakes/openaiStub';
import { REPO } from '../e2e/cliHelpers';
import { agentVenvPython } from '../python/venvs.mjs';
import { assertTicketRows, runAndExport, startTicketServer, ticketLab } from './supportTicket';

/*
 * The conformance matrix's Python column: the support ticket written with each
 * Python framework from its real package (pinned in python/requirements.txt,
 * installed in .venv-agents/ by scripts/setupAgentVenv.sh), each on the lab's
 * helper package (python-agent/), run as a command agent through the CLI
 * against the OpenAI-compatible test server, each held to the same rows.
 */

const PYTHON = agentVenvPython();
const AGENTS = join(REPO, 'test', 'conformance', 'agents', 'python');

const FRAMEWORKS: Array<{ name: string; file: string }> = [
  { name: 'the standard library with GenAI spans (rollout_lab_agent alone)', file: 'stdlib_genai.py' },
  { name: 'the OpenAI Python client with opentelemetry-instrumentation-openai-v2', file: 'openai_otel.py' },
  { name: 'LangGraph (Python) StateGraph + ToolNode with OpenInference', file: 'langgraph_oi.py' },
  { name: 'the OpenAI Agents SDK (Python) with OpenInference', file: 'openai_agents_oi.py' },
];

let stub: OpenAIStub;
const workspaces: string[] = [];

before(async () => {
  // No venv is a failure that says how to make it, never a skip.
  assert.ok(existsSync(PYTHON), `the Python agents' venv is missing (${PYTHON}): run bash scripts/setupAgentVenv.sh`);
  const probe = spawnSync(PYTHON, ['-c', 'import rollout_lab_agent, langgraph, agents, opentelemetry.instrumentation.openai_v2'], { encoding: 'utf8' });
  assert.equal(probe.status, 0, `${PYTHON} lacks the matrix's packages — run bash scripts/setupAgentVenv.sh: ${probe.stderr}`);
  stub = await startTicketServer();
});
after(async () => {
  await stub?.close();
  for (const ws of workspaces) rmSync(ws, { recursive: true, force: true });
});

describe('conformance: Python agent frameworks give the support ticket\'s training rows', () => {
  for (const f of FRAMEWORKS) {
    test(f.name, async () => {
      const ws = ticketLab(
        // The helper from the source tree, so the test runs what is checked out (the venv holds it pip-installed too).
        { kind: 'command', command: [PYTHON, 'agent.py'], env: { PYTHONPATH: join(REPO, 'python-agent'), PYTHONDONTWRITEBYTECODE: '1' } },
        stub.url,
        { 'agent.py': readFileSync(join(AGENTS, f.file), 'utf8') },
      );
      workspaces.push(ws);
      assertTicketRows(await runAndExport(ws));
    });
  }
});
