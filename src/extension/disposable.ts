import type * as vscode from 'vscode';

/**
 * Owns what a class creates or subscribes to: each piece is registered where
 * it is made and disposed, in the order registered, with its owner. Disposing
 * twice does nothing, and a piece registered after its owner was disposed is
 * disposed at once (a late subscription from an async step never leaks).
 */
export abstract class Disposable implements vscode.Disposable {
  #owned: vscode.Disposable[] = [];
  #disposed = false;

  protected get isDisposed(): boolean {
    return this.#disposed;
  }

  protected register<T extends vscode.Disposable>(d: T): T {
    if (this.#disposed) d.dispose();
    else this.#owned.push(d);
    return d;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const d of this.#owned.splice(0)) d.dispose();
  }
}

/** A lifetime shorter than its owner's (one opened lab, one job): what it holds goes when it ends, the owner stays. */
export class DisposableStore extends Disposable {
  add<T extends vscode.Disposable>(d: T): T {
    return this.register(d);
  }
}
