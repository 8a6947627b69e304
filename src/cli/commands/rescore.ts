import { UsageError } from '../../core/errors';

/** rollout-lab rescore */
export async function rescoreCommand(argv: string[], usage: string): Promise<number> {
  void argv;
  void usage;
  throw new UsageError('rescore: not available yet');
}
