import { specYaml } from './jobBundle';
import type { DryRun } from './jobDraft';

/** What a dry run would do, as text: the spec, the files it writes and every command the target gets (the CLI's --dry-run, the editor's Dry Run). */
export function dryRunText(dry: DryRun): string {
  const lines = [`DRY RUN — nothing is launched. Job ${dry.spec.id} (${dry.spec.phase.kind}) on ${dry.plan.target}; data: ${Object.entries(dry.data).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`];
  // A local target says which python would run it, and whether it could train here.
  if (dry.python) lines.push(`python: ${dry.python.summary}`);
  lines.push('');
  lines.push('job.yaml:', ...specYaml(dry.spec).trimEnd().split('\n').map((l) => `  ${l}`), '');
  for (const f of dry.plan.files) lines.push(`writes ${f.path}:`, ...f.content.trimEnd().split('\n').map((l) => `  ${l}`), '');
  dry.plan.steps.forEach((s, i) => {
    lines.push(`${i + 1}. ${s.title}`);
    lines.push(`   argv: ${JSON.stringify(s.argv)}`);
    if (s.cwd) lines.push(`   cwd: ${s.cwd}`);
    if (s.env?.length) lines.push(`   env: ${s.env.join(', ')}`);
    if (s.stdin) lines.push(`   stdin: ${s.stdin.trimEnd().split('\n').join(' | ')}`);
  });
  return lines.join('\n');
}

