/**
 * Errors that cross the core boundary. Each carries the exit code the CLI uses
 * and a message that says what is wrong and how to fix it, on one line.
 */
export class LabError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad command-line usage: exit code 2. */
export class UsageError extends LabError {
  constructor(message: string) {
    super(message, 2);
  }
}

/** A config file that is missing, malformed or invalid: exit code 2. */
export class ConfigError extends LabError {
  constructor(
    message: string,
    readonly file?: string,
  ) {
    super(message, 2);
  }
}

/** A dataset that cannot be read; names the file and line: exit code 2. */
export class DatasetError extends LabError {
  constructor(
    message: string,
    readonly file: string,
    readonly line?: number,
  ) {
    super(message, 2);
  }
}

/** Something failed while running (endpoint down, store unwritable): exit code 1. */
export class RuntimeFailure extends LabError {
  constructor(message: string) {
    super(message, 1);
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
