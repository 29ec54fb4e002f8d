/**
 * The INITDATA key of peer-pods-cm: when set, it must be an initdata value the guest accepts (initdata.ts),
 * or every pod VM the cloud-api-adaptor starts would fail to start. Its own file so that the ConfigMap's
 * validation calls it in one line.
 */
import { INITDATA_KEY } from '../api/initdata.ts';
import { PEER_PODS_CM } from '../api/names.ts';
import { decodeInitdata, InitdataError } from './initdata.ts';

/** A key and what is wrong with it: config.ts's Problem, restated so that this file need not import it back. */
interface KeyProblem {
  key: string;
  message: string;
}

/** The last value checked and its findings: the ConfigMap is validated on every pass, the value rarely changes. */
let last: { value: string; problem?: string; warnings: string[] } | undefined;

/** Adds INITDATA's problem (at most one: the outermost layer at fault) and warnings. */
export function checkInitdataSetting(data: Record<string, string>, problems: KeyProblem[], warnings: KeyProblem[]): void {
  const value = data[INITDATA_KEY];
  if (value === undefined) return;
  if (last?.value !== value) last = { value, ...findings(value) };
  if (last.problem !== undefined)
    problems.push({ key: INITDATA_KEY, message: `${INITDATA_KEY} in ConfigMap ${PEER_PODS_CM}: ${last.problem}` });
  for (const w of last.warnings) warnings.push({ key: INITDATA_KEY, message: `${INITDATA_KEY}: ${w}` });
}

function findings(value: string): { problem?: string; warnings: string[] } {
  try {
    return { warnings: decodeInitdata(value).warnings };
  } catch (e) {
    if (e instanceof InitdataError) return { problem: e.message, warnings: [] };
    throw e;
  }
}
