import type { BanditConfig } from '../config/trainingSchema';
import type { BanditLearner, LearnerJSON } from './learner';
import { LinUcb } from './linucb';
import { LogisticBandit } from './logistic';

/** A fresh learner as lab.json's "bandit" section describes it. */
export function createLearner(config: Pick<BanditConfig, 'algorithm' | 'features' | 'alpha' | 'learningRate'>): BanditLearner {
  return config.algorithm === 'logistic' ? new LogisticBandit(config.features, config.learningRate) : new LinUcb(config.features, config.alpha);
}

/** A learner read back from a policy file; throws a plain Error saying which field is wrong. */
export function learnerFromJSON(json: unknown): BanditLearner {
  if (!json || typeof json !== 'object') throw new Error('"learner" is missing');
  const l = json as LearnerJSON;
  if (l.algorithm === 'linucb') return LinUcb.fromJSON(l);
  if (l.algorithm === 'logistic') return LogisticBandit.fromJSON(l);
  throw new Error(`unknown learner algorithm ${JSON.stringify(l.algorithm)} (expected "linucb" or "logistic")`);
}
