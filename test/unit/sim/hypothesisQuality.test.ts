import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seededRandom } from '../../../src/core/sim/seededRandom';
import { readHypothesis, taskTerms } from '../../../src/core/sim/hypothesisQuality';
import { drawTraits, juniorHypothesisText, type HypothesisTraits } from '../../../src/core/sim/juniorHypothesis';
import { findEntities, keyPhrases } from '../../../src/core/sim/textFeatures';
import { pubmedqaTasks } from './labFixtures';

const AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist', null];

test('a simulated junior hypothesis shows its quality in its text: what the simulator reads back is what was drawn', () => {
  const seen: Record<keyof HypothesisTraits, Set<boolean>> = { onTopic: new Set(), mechanism: new Set(), measurable: new Set(), hedged: new Set() };
  for (const task of pubmedqaTasks(40)) {
    const terms = taskTerms(task);
    // The slots a junior fills, as researchAnswers takes them from the task.
    const phrases = keyPhrases(`${task.goal}\n${task.context}`, task.goal, 8).map((p) => p.text);
    const slots = { a: phrases[0] ?? 'the exposure', b: phrases[1] ?? 'the outcome', c: phrases[2] ?? 'the mechanism', entity: findEntities(`${task.goal}\n${task.context}`)[0] ?? null };
    AGENTS.forEach((agent, i) => {
      const rng = seededRandom('quality', task.id, i);
      const traits = drawTraits(rng);
      const text = juniorHypothesisText(agent, slots, traits, rng);
      const read = readHypothesis(text, terms);
      const where = `${task.id} ${agent}: ${text}`;
      // Off topic it may still name one of the task's terms by coincidence ("social support" and a task about "support").
      if (traits.onTopic) assert.equal(read.grounding, 1, `grounding, ${where}`);
      else assert.ok(read.grounding <= 0.5, `grounding, ${where}`);
      assert.equal(read.mechanism, traits.mechanism, `mechanism, ${where}`);
      assert.equal(read.measurable, traits.measurable, `measurable, ${where}`);
      assert.equal(read.hedged, traits.hedged, `hedged, ${where}`);
      for (const k of Object.keys(seen) as Array<keyof HypothesisTraits>) seen[k].add(traits[k]);
      // Quality orders the traits: grounded first, then a measurable outcome, a mechanism, no hedging.
      const want = 0.45 * read.grounding + 0.25 * (traits.measurable ? 1 : 0) + 0.15 * (traits.mechanism ? 1 : 0) + 0.15 * (traits.hedged ? 0 : 1);
      assert.ok(Math.abs(read.quality - want) < 1e-9, `quality, ${where}`);
    });
  }
  for (const [k, values] of Object.entries(seen)) assert.equal(values.size, 2, `${k} took both values over the tasks`);
});
