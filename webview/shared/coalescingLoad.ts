/**
 * Wraps a panel's load so that loads never overlap: a call while one runs
 * (a store change during a load) asks for one more run after it, however many
 * calls arrive. The promise settles when no run is pending.
 */
export function coalescingLoad(load: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  let again = false;
  return (): Promise<void> => {
    if (running) {
      again = true;
      return running;
    }
    running = (async (): Promise<void> => {
      try {
        do {
          again = false;
          await load();
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  };
}
