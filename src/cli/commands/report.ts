import { UsageError } from '../../core/errors';

/** rollout-lab report */
export async function reportCommand(argv: string[], usage: string): Promise<number> {
  void argv;
  void usage;
  throw new UsageError('report: not available yet');
}
