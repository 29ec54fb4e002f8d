/**
 * The initdata keys of peer-pods-cm: INITDATA (read by the cloud-api-adaptor) and DEFAULT_POD_INITDATA (read
 * by osc's pod webhook). When set, each must be an initdata value the guest accepts (initdata.ts), or every
 * pod VM started with it would fail to start. Its own file so that the ConfigMap's validation calls it in one
 * line.
 */
import { DEFAULT_POD_INITDATA_KEY, INITDATA_KEY } from '../api/initdata.ts';
import { PEER_PODS_CM } from '../api/names.ts';
import { decodeInitdata, InitdataError } from './initdata.ts';

/** A key and what is wrong with it: config.ts's Problem, restated so that this file need not import it back. */
interface KeyProblem {
  key: string;
  message: string;
}

interface Findings {
  problem?: string;
  warnings: string[];
}

/** The last value checked per key and its findings: the ConfigMap is validated on every pass, the values rarely change. */
const last = new Map<string, { value: string } & Findings>();

/** Adds each initdata key's problem (at most one: the outermost layer at fault) and warnings. */
export function checkInitdataSetting(data: Record<string, string>, problems: KeyProblem[], warnings: KeyProblem[]): void {
  for (const key of [INITDATA_KEY, DEFAULT_POD_INITDATA_KEY]) {
    const value = data[key];
    if (value === undefined) continue;
    const f = initdataFindings(key, value);
    if (f.problem !== undefined) problems.push({ key, message: `${key} in ConfigMap ${PEER_PODS_CM}: ${f.problem}` });
    for (const w of f.warnings) warnings.push({ key, message: `${key}: ${w}` });
  }
}

/** What is wrong with one key's value (cached per key: the webhook asks for every pod). */
export function initdataFindings(key: string, value: string): Findings {
  let f = last.get(key);
  if (f?.value !== value) {
    f = { value, ...findings(value) };
    last.set(key, f);
  }
  return f;
}

function findings(value: string): Findings {
  try {
    return { warnings: decodeInitdata(value).warnings };
  } catch (e) {
    if (e instanceof InitdataError) return { problem: e.message, warnings: [] };
    throw e;
  }
}
