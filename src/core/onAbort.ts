/**
 * Calls `fn` once when `signal` aborts (at once if it already has) and returns
 * what removes the listener again. Unlike `AbortSignal.any`, which in Node 20
 * leaves an entry on the source signal for as long as that signal lives, this
 * leaves nothing behind on a long-lived signal once the guarded work is over.
 */
export function onAbort(signal: AbortSignal | undefined, fn: () => void): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}
