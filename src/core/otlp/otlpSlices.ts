import { setImmediate as nextTurn } from 'node:timers/promises';
import { OtlpPayloadError } from './otlpModel';

/**
 * How long one request may hold the event loop before it lets other clients
 * in. Decoding, normalising and storing run as generators that pause (yield)
 * at points where stopping is safe; the receiver resumes them on a later turn.
 */
const SLICE_MS = 8;
/** Work units between looks at the clock (reading it costs more than a unit). */
const CHECK_EVERY = 1024;

/** A request over a limit of the receiver: answered 413, nothing stored. */
export class OtlpLimitError extends OtlpPayloadError {
  override name = 'OtlpLimitError';
  constructor(
    message: string,
    readonly limit: string,
    readonly value: number,
  ) {
    super(message);
  }
}

/**
 * What one request may cost, counted while it is decoded: every value (an
 * attribute's value, each element of an array, each entry of a key-value
 * list) is one unit and every array or list one more, so a request of many
 * tiny nested values costs what it costs to decode, whatever its byte size.
 */
export class RequestBudget {
  private spent = 0;
  private untilCheck = CHECK_EVERY;
  private sliceStart = performance.now();

  constructor(readonly maxValues: number) {}

  /** Spends `n` units; throws OtlpLimitError past the budget. */
  spend(n: number, where: () => string): void {
    if (!this.take(n)) throw this.exceeded(where());
  }

  /** Spends `n` units; false past the budget (the caller throws `exceeded`), for callers that name the place only then. */
  take(n: number): boolean {
    this.spent += n;
    this.untilCheck -= n;
    return this.spent <= this.maxValues;
  }

  /** The error for a request over its budget at `where`. */
  exceeded(where: string): OtlpLimitError {
    return new OtlpLimitError(
      `the request holds more than ${this.maxValues} values (attribute values, array elements and key-value entries together; the limit maxValuesPerRequest), exceeded at ${where}; export smaller batches or smaller attributes`,
      'maxValuesPerRequest',
      this.maxValues,
    );
  }

  /** True when the current slice has run its time: the caller yields. */
  due(): boolean {
    if (this.untilCheck > 0) return false;
    this.untilCheck = CHECK_EVERY;
    return performance.now() - this.sliceStart > SLICE_MS;
  }

  /** For work that counts no values (normalising, storing): looks at the clock every call. */
  dueNow(): boolean {
    return performance.now() - this.sliceStart > SLICE_MS;
  }

  resumed(): void {
    this.sliceStart = performance.now();
    this.untilCheck = CHECK_EVERY;
  }

  get used(): number {
    return this.spent;
  }
}

/** Steps of work that pause by yielding. */
export type Sliced<T> = Generator<void, T, void>;

/** Runs the steps to the end at once (for callers that have no other clients to let in). */
export function runAtOnce<T>(steps: Sliced<T>): T {
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
  }
}

/** Runs the steps, letting the event loop turn at each pause. */
export async function runInSlices<T>(steps: Sliced<T>, budget: RequestBudget): Promise<T> {
  for (;;) {
    const s = steps.next();
    if (s.done) return s.value;
    await nextTurn();
    budget.resumed();
  }
}
