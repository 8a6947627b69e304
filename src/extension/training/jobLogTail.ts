import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { parseTrainerEvent, type MetricPoint } from '../../core/train/jobs/trainerEvents';

/** A metrics point and when this process read it (the log's lines carry no time). */
export type TimedPoint = MetricPoint & { at: number };

/**
 * The metrics of a job read from its job.log, incrementally: each read only
 * parses what the log gained since the last one. A follower that reattaches
 * to a remote job writes job.log again from the start; a log that shrank is
 * read again from the start and the read says so (`reset`), so the view and
 * the curves never show a replayed step twice.
 */
export class JobLogTail {
  private offset = 0;
  private partial = '';
  // A character split between two reads is decoded whole on the second.
  private decoder = new StringDecoder('utf8');
  private readonly pointList: TimedPoint[] = [];
  /** The steps the trainer plans (its start event), once the log said so. */
  totalSteps: number | null = null;

  constructor(readonly file: string) {}

  get points(): readonly TimedPoint[] {
    return this.pointList;
  }

  /** Reads what is new; `added` are the points found now, `reset` says the earlier ones are void. */
  read(): { reset: boolean; added: TimedPoint[] } {
    if (!existsSync(this.file)) return this.offset > 0 ? this.restart([]) : { reset: false, added: [] };
    const fd = openSync(this.file, 'r');
    try {
      const size = fstatSync(fd).size;
      let reset = false;
      if (size < this.offset) {
        this.restart([]);
        reset = true;
      }
      const added: TimedPoint[] = [];
      const at = Date.now();
      const buf = Buffer.alloc(Math.min(1 << 20, Math.max(1, size - this.offset)));
      while (this.offset < size) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, size - this.offset), this.offset);
        if (n <= 0) break;
        this.offset += n;
        const lines = (this.partial + this.decoder.write(buf.subarray(0, n))).split('\n');
        this.partial = lines.pop() ?? '';
        for (const line of lines) {
          const ev = parseTrainerEvent(line.replace(/\r$/, ''));
          if (ev?.event === 'metrics') added.push({ step: ev.step, values: ev.values, at });
          else if (ev?.event === 'start' && ev.steps !== undefined && ev.steps > 0) this.totalSteps = ev.steps;
        }
      }
      this.pointList.push(...added);
      return { reset, added };
    } finally {
      closeSync(fd);
    }
  }

  private restart(added: TimedPoint[]): { reset: boolean; added: TimedPoint[] } {
    this.offset = 0;
    this.totalSteps = null;
    this.partial = '';
    this.decoder = new StringDecoder('utf8');
    this.pointList.length = 0;
    return { reset: true, added };
  }
}

/** One tail per log file for the Training view (each curves panel keeps its own, to know what it has sent). */
export class JobLogTails {
  private readonly tails = new Map<string, JobLogTail>();

  /** The points of a job's log, read up to now. */
  points(file: string): readonly MetricPoint[] {
    const t = this.tail(file);
    t.read();
    return t.points;
  }

  tail(file: string): JobLogTail {
    let t = this.tails.get(file);
    if (!t) {
      t = new JobLogTail(file);
      this.tails.set(file, t);
    }
    return t;
  }
}
