/**
 * How the values of peer-pods-cm are read (Go durations, booleans and numbers as the cloud-api-adaptor reads
 * them, comma lists) and quoted back in messages.
 */
import type { Problem } from './clouds/provider.ts';

const MAX_SHOWN = 64;

/** A value quoted for a message, escaped (newlines show as \n) and shortened. */
export function q(value: string): string {
  const shown = value.length > MAX_SHOWN ? `${value.slice(0, MAX_SHOWN)}...` : value;
  return JSON.stringify(shown);
}

/** `^(\+|-)?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)` repeated: Go's time.ParseDuration. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const m = /^([+-]?)((?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (!m) return undefined;
  let total = 0;
  for (const part of (m[2] as string).matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(part[1]) * (unitMs[part[2] as string] as number);
  }
  return m[1] === '-' ? -total : total;
}

/** Parses a comma list (no spaces, no empty items), reporting what is wrong. */
export function commaList(key: string, value: string, what: string, example: string, problems: Problem[]): string[] | undefined {
  if (/\s/.test(value)) {
    problems.push({ key, message: `${key} is ${q(value)}: the list must not contain spaces; write it as ${example}` });
    return undefined;
  }
  const items = value.split(',');
  if (items.some((i) => i === '')) {
    problems.push({
      key,
      message: `${key} is ${q(value)}: it has an empty item (a leading, trailing or doubled comma); write it as ${example}`,
    });
    return undefined;
  }
  const dup = items.find((i, n) => items.indexOf(i) !== n);
  if (dup !== undefined) {
    problems.push({ key, message: `${key} is ${q(value)}: ${what} ${q(dup)} is listed twice; list each once` });
    return undefined;
  }
  return items;
}

export function positiveInt(value: string): number | undefined {
  if (!/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Go's strconv.ParseBool, which the cloud-api-adaptor uses. */
export function goBool(value: string): boolean | undefined {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  return undefined;
}

/** A value copied from the docs without replacing the placeholder, like "<aws_region>". */
export function isPlaceholder(value: string): boolean {
  return /^<[^>]*>$/.test(value);
}
