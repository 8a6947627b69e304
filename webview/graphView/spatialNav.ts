/*
 * Arrow-key movement between graph nodes: the nearest node in the pressed
 * direction, preferring ones straight ahead over ones far to the side.
 */

export interface Box {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export type Direction = 'up' | 'down' | 'left' | 'right';

export function directionOfKey(key: string): Direction | null {
  switch (key) {
    case 'ArrowUp':
      return 'up';
    case 'ArrowDown':
      return 'down';
    case 'ArrowLeft':
      return 'left';
    case 'ArrowRight':
      return 'right';
    default:
      return null;
  }
}

export function nearestInDirection(from: Box, boxes: readonly Box[], dir: Direction): Box | null {
  const cx = from.x + from.width / 2;
  const cy = from.y + from.height / 2;
  let best: Box | null = null;
  let bestScore = Infinity;
  for (const b of boxes) {
    if (b.id === from.id) continue;
    const dx = b.x + b.width / 2 - cx;
    const dy = b.y + b.height / 2 - cy;
    const ahead = dir === 'down' ? dy : dir === 'up' ? -dy : dir === 'right' ? dx : -dx;
    const side = dir === 'down' || dir === 'up' ? Math.abs(dx) : Math.abs(dy);
    if (ahead <= 1) continue;
    const score = ahead + 2 * side;
    if (score < bestScore) {
      bestScore = score;
      best = b;
    }
  }
  return best;
}

/** Reading order: top to bottom, then left to right; the Tab order of the nodes. */
export function readingOrder<T extends { x: number; y: number }>(boxes: readonly T[]): T[] {
  return [...boxes].sort((a, b) => a.y - b.y || a.x - b.x);
}
