/** Options and argument helpers shared by `streamfeat replay` and `streamfeat export`. */
import { type OptionSpec, oneOfArg, UsageError } from '../cli_args';

/** --features, --spine-time-field, --out, --bad-lines: the same meaning in both tools. */
export function sharedOptions(badLinesHelp: string): OptionSpec[] {
  return [
    { name: 'features', type: 'string', value: 'a,b', help: 'only these features, in this order' },
    { name: 'spine-time-field', type: 'string', value: 'NAME', help: 'the spine\'s time column', default: 'time_ms' },
    { name: 'out', type: 'string', value: 'FILE', help: 'output file', default: 'stdout' },
    { name: 'bad-lines', type: 'string', value: 'fail|skip', help: badLinesHelp, default: 'fail' },
  ];
}

export const EXIT_CODES_NOTE = 'exit codes: 0 done, 2 bad command line or bad input (the message names the file and line)';

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

/** --features a,b as a list (null: not given). */
export function featureList(values: Record<string, unknown>): string[] | null {
  const raw = values.features;
  return typeof raw !== 'string' ? null : raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** --bad-lines skip. */
export function skipsBadLines(values: Record<string, unknown>): boolean {
  return oneOfArg('--bad-lines', typeof values['bad-lines'] === 'string' ? values['bad-lines'] : 'fail', ['fail', 'skip']) === 'skip';
}

/** --spine-time-field. */
export function spineTimeField(values: Record<string, unknown>): string {
  return typeof values['spine-time-field'] === 'string' ? values['spine-time-field'] : 'time_ms';
}
