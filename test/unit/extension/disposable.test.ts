import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Disposable, DisposableStore } from '../../../src/extension/disposable';

class Owner extends Disposable {
  own(d: { dispose(): void }): void {
    this.register(d);
  }
  get disposed(): boolean {
    return this.isDisposed;
  }
}

describe('Disposable', () => {
  it('disposes what it registered once, in the order registered', () => {
    const order: string[] = [];
    const owner = new Owner();
    owner.own({ dispose: () => order.push('a') });
    owner.own({ dispose: () => order.push('b') });
    owner.dispose();
    owner.dispose();
    assert.deepEqual(order, ['a', 'b']);
    assert.equal(owner.disposed, true);
  });

  it('disposes at once what is registered after it was disposed', () => {
    const owner = new Owner();
    owner.dispose();
    let disposed = 0;
    owner.own({ dispose: () => void disposed++ });
    assert.equal(disposed, 1);
  });

  it('a store returns what it adds, so a field can be made and owned in one line', () => {
    const store = new DisposableStore();
    const piece = { dispose: () => undefined, name: 'watcher' };
    assert.equal(store.add(piece), piece);
    store.dispose();
  });
});
