/** A command line that is wrong: the CLI prints the error and its usage, exit 2. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { CodeActError } from '../core/util/errors';

export class UsageError extends CodeActError {
  readonly category = 'usage' as const;
}

export function parse<T extends ParseArgsConfig['options']>(config: { args: string[]; options: T }) {
  try {
    return parseArgs({ args: config.args, options: config.options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}
