import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import { tempWorkspace } from './helpers/storeFixtures';

test('two agents running the same prompt text each own that version, and it survives a reopen', async () => {
  const ws = tempWorkspace();
  try {
    const store = await TraceStore.open(ws.dir);
    store.putPromptVersion({ hash: 'da09011c', agent: 'Geneticist', text: 'Same text.', firstSeen: 1000 });
    store.putPromptVersion({ hash: 'da09011c', agent: 'Neurologist', text: 'Same text.', firstSeen: 2000 });
    store.putPromptVersion({ hash: 'da09011c', agent: 'Neurologist', text: 'Same text.', firstSeen: 3000 });
    assert.deepEqual(store.listPromptVersions('Neurologist').map((v) => [v.agent, v.hash, v.firstSeen]), [['Neurologist', 'da09011c', 2000]]);
    assert.deepEqual(store.listPromptVersions('Geneticist').map((v) => v.hash), ['da09011c']);
    assert.equal(store.getPromptVersion('da09011c')!.text, 'Same text.');
    assert.equal(store.getPromptVersion('da09011c', 'Pharmacologist'), null);
    await store.close();
    // Rebuilt from the journals: the same two rows.
    const again = await TraceStore.open(ws.dir);
    assert.deepEqual(again.listPromptVersions().map((v) => [v.agent, v.hash]), [['Geneticist', 'da09011c'], ['Neurologist', 'da09011c']]);
    await again.close();
  } finally {
    ws.cleanup();
  }
});
