import { UsageError } from '../../core/errors';

/** rollout-lab compare */
export async function compareCommand(argv: string[], usage: string): Promise<number> {
  void argv;
  void usage;
  throw new UsageError('compare: not available yet');
}
