/**
 * `osc initdata ...`: build, read, check and digest initdata values (docs/peerpods.md, "Initdata"), as a
 * pure function of its arguments like `osc policy`: the CLI wires `runInitdataCommand(args)` and prints
 * what it answers.
 */
import { readFileSync } from 'node:fs';
import {
  DEFAULT_INITDATA_ALGORITHM,
  INITDATA_ALGORITHMS,
  INITDATA_ANNOTATION,
  INITDATA_KEY,
  type InitdataAlgorithm,
} from '../../api/initdata.ts';
import { buildInitdata, decodeInitdata, decodeInitdataText, InitdataError, initdataReferenceValues } from '../../peerpods/initdata.ts';
import { defaultPolicy, hardenedPolicy } from '../../peerpods/policy.ts';

export interface InitdataCommandResult {
  stdout: string;
  stderr: string;
  /** 0 ok, 1 the input is refused (or cannot be read), 2 usage error. */
  code: number;
}

export interface InitdataCommandIO {
  /** Reads a file (default: fs.readFileSync as UTF-8). */
  readFile?: (path: string) => string;
  /** What `-` reads (the CLI passes standard input). */
  stdin?: string;
}

export const INITDATA_USAGE = `Usage: osc initdata <command> [options]

Initdata configures a peer pod VM's guest at start: the attestation agent (aa.toml), the confidential
data hub (cdh.toml) and the Kata Agent policy (policy.rego), in one TOML document, gzipped and
base64-encoded. Set it for every peer pod as ${INITDATA_KEY} in peer-pods-cm, or for one pod in the
annotation ${INITDATA_ANNOTATION}.

Commands:
  build [--aa <file>] [--cdh <file>]       print the encoded value of a document holding the given files
        [--policy <file> | --policy-preset default|hardened]
        [--algorithm sha256|sha384|sha512] (default ${DEFAULT_INITDATA_ALGORITHM}); --toml prints the document instead
  decode <value|->                         print the TOML document of a value
  check <value|->                          check a value as the operator does (exit 1 with the error)
  digest <value|->                         print the reference value an attestation service (Trustee)
                                           compares with the pod VM's evidence, for each TEE

Examples:
  $ osc initdata build --aa aa.toml --cdh cdh.toml --policy-preset hardened > initdata.b64
  $ osc initdata check - < initdata.b64
  $ oc get cm peer-pods-cm -n openshift-sandboxed-containers-operator -o jsonpath='{.data.${INITDATA_KEY}}' | osc initdata decode -
  $ osc initdata digest "$(cat initdata.b64)"
`;

const ok = (stdout: string, stderr = ''): InitdataCommandResult => ({ stdout, stderr, code: 0 });
const fail = (stderr: string): InitdataCommandResult => ({ stdout: '', stderr, code: 1 });
const usage = (message: string): InitdataCommandResult => ({ stdout: '', stderr: `error: ${message}\n\n${INITDATA_USAGE}`, code: 2 });

const VALUE_FLAGS = ['--aa', '--cdh', '--policy', '--policy-preset', '--algorithm'];

/** Runs `osc initdata <args>`; never throws, never exits: the caller prints and exits with `code`. */
export function runInitdataCommand(args: readonly string[], io: InitdataCommandIO = {}): InitdataCommandResult {
  const [command, ...rest] = args;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h' || rest.includes('--help')) {
    return ok(INITDATA_USAGE);
  }
  if (command === 'build') return build(rest, io);
  if (command !== 'decode' && command !== 'check' && command !== 'digest') return usage(`unknown command "${command}"`);
  const flag = rest.find((a) => a.startsWith('--'));
  if (flag) return usage(`unknown option ${flag} for "initdata ${command}"`);
  if (rest.length === 0) return usage('missing the initdata value (the base64 text, or - for standard input)');
  if (rest.length > 1) return usage(`"initdata ${command}" takes one value; unexpected "${rest[1]}"`);
  let value = rest[0] as string;
  if (value === '-') {
    if (io.stdin === undefined) return fail('error: nothing on standard input\n');
    // A shell pipe ends the value with a line break that is not part of it.
    value = io.stdin.replace(/\r?\n$/, '');
  }
  try {
    if (command === 'decode') return ok(decodeInitdataText(value));
    const initdata = decodeInitdata(value);
    const notes = initdata.warnings.map((w) => `warning: ${w}\n`).join('');
    if (command === 'check') {
      const docs = Object.keys(initdata.data).join(', ');
      return ok(`initdata OK: version ${initdata.version}, ${initdata.algorithm}, ${docs}\n`, notes);
    }
    const r = initdataReferenceValues(initdata);
    return ok(
      [
        `${r.algorithm} of the initdata document (the reference value for the init_data claim):`,
        `  ${r.digest}`,
        'Intel TDX, MRCONFIGID (48 bytes, the digest zero-padded or cut to 48):',
        `  ${r.tdxMrConfigId}`,
        'AMD SEV-SNP, HOST_DATA (32 bytes, the digest cut to 32):',
        `  ${r.snpHostData}`,
        'vTPM (Azure confidential VMs), PCR 8 (sha256 of the document extended into zeros):',
        `  ${r.vtpmPcr8}`,
        '',
      ].join('\n'),
      notes,
    );
  } catch (e) {
    if (e instanceof InitdataError) return fail(`error: ${e.message}\n`);
    throw e;
  }
}

function build(rest: readonly string[], io: InitdataCommandIO): InitdataCommandResult {
  const given: Record<string, string> = {};
  let toml = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    if (arg === '--toml') {
      toml = true;
      continue;
    }
    if (!VALUE_FLAGS.includes(arg))
      return usage(arg.startsWith('--') ? `unknown option ${arg} for "initdata build"` : `unexpected argument "${arg}"`);
    const v = rest[i + 1];
    if (v === undefined || v.startsWith('--')) return usage(`${arg} needs a value`);
    if (arg in given) return usage(`${arg} is given twice`);
    given[arg] = v;
    i++;
  }
  const algorithm = given['--algorithm'] ?? DEFAULT_INITDATA_ALGORITHM;
  if (!(INITDATA_ALGORITHMS as readonly string[]).includes(algorithm)) {
    return usage(`--algorithm is "${algorithm}": use one of ${INITDATA_ALGORITHMS.join(', ')}`);
  }
  if (given['--policy'] !== undefined && given['--policy-preset'] !== undefined)
    return usage('--policy and --policy-preset exclude each other');
  const preset = given['--policy-preset'];
  if (preset !== undefined && preset !== 'default' && preset !== 'hardened') {
    return usage(`--policy-preset is "${preset}": use default (permissive, development only) or hardened (osc policy hardened)`);
  }
  if (given['--aa'] === undefined && given['--cdh'] === undefined && given['--policy'] === undefined && preset === undefined) {
    return usage('give at least one of --aa, --cdh, --policy or --policy-preset');
  }
  const documents: Record<string, string> = {};
  for (const [flag, name] of [
    ['--aa', 'aa.toml'],
    ['--cdh', 'cdh.toml'],
    ['--policy', 'policy.rego'],
  ] as const) {
    const path = given[flag];
    if (path === undefined) continue;
    try {
      documents[name] = (io.readFile ?? ((p: string) => readFileSync(p, 'utf8')))(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return fail(`error: cannot read ${path} (${flag}): ${code === 'ENOENT' ? 'no such file' : (e as Error).message}\n`);
    }
  }
  if (preset !== undefined) documents['policy.rego'] = preset === 'hardened' ? hardenedPolicy() : defaultPolicy();
  try {
    const built = buildInitdata({ algorithm: algorithm as InitdataAlgorithm, documents });
    const notes = preset === 'default' ? 'warning: the default policy allows oc exec; use --policy-preset hardened in production\n' : '';
    return ok(toml ? built.toml : `${built.value}\n`, notes);
  } catch (e) {
    if (e instanceof InitdataError) return fail(`error: ${e.message}\n`);
    throw e;
  }
}
