import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { genericOutcome, researchLabOutcome } from '../../../src/core/graph/outcome';

describe('graph outcomes', () => {
  it('research lab: the final protocol as text, the decision, turns and failures', () => {
    const base = { finalDecision: 'GO' as const, turns: 11, failures: [{ agent: 'SafetyOfficer', error: 'bad json', raw: 'x' }] };
    const o = researchLabOutcome({ ...base, finalProtocol: { title: 'T', steps: ['a'] } });
    assert.deepEqual(JSON.parse(o.finalOutput!), { title: 'T', steps: ['a'] });
    assert.equal(o.decision, 'GO');
    assert.equal(o.turns, 11);
    assert.deepEqual(o.failures, [{ agent: 'SafetyOfficer', error: 'bad json' }]);
    assert.equal(researchLabOutcome({ ...base, finalProtocol: 'Step 1: do it' }).finalOutput, 'Step 1: do it');
    assert.equal(researchLabOutcome({ ...base, finalProtocol: '   ' }).finalOutput, null);
    assert.equal(researchLabOutcome({ ...base, finalProtocol: null, finalDecision: null }).decision, null);
  });

  it('user graphs: final_output, then output, then the last AI message', () => {
    const messages = [new HumanMessage('q'), new AIMessage('first'), new AIMessage('last answer')];
    assert.equal(genericOutcome({ final_output: 'F', output: 'O', messages }).finalOutput, 'F');
    assert.equal(genericOutcome({ output: { x: 1 }, messages }).finalOutput, JSON.stringify({ x: 1 }, null, 2));
    const fromMessages = genericOutcome({ messages });
    assert.equal(fromMessages.finalOutput, 'last answer');
    assert.equal(fromMessages.turns, 2);
    assert.equal(fromMessages.decision, null);
  });

  it('user graphs: decision, turns and failures when the state has them', () => {
    const o = genericOutcome({ final_decision: 'NO-GO', turns: 4, failures: [{ agent: 'A', error: 'e', extra: 1 }, 'junk'] });
    assert.equal(o.decision, 'NO-GO');
    assert.equal(o.turns, 4);
    assert.deepEqual(o.failures, [{ agent: 'A', error: 'e' }]);
    assert.equal(genericOutcome({ decision: 'yes', final_decision: 'no' }).decision, 'yes');
    assert.deepEqual(genericOutcome(null), { finalOutput: null, decision: null, turns: 0, failures: [] });
  });
});
