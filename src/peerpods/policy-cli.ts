/**
 * `osc policy ...`: the Kata Agent policy tooling (docs/peerpods.md) as a command, independent of the CLI
 * framework. The CLI wires `runPolicyCommand(args)` and prints what it answers:
 *
 *   osc policy default                       the permissive default policy (development and test only)
 *   osc policy hardened [--allow-exec CMD]... [--no-exec]
 *                                            the recommended production policy: ExecProcessRequest (and the
 *                                            stream requests, SetPolicyRequest) denied, oc exec allowed only
 *                                            for CMD (default: the documented attestation status command)
 *   osc policy check FILE|- [--strict]       checks a policy; exit 1 on problems (--strict: also on warnings
 *                                            and when oc exec is allowed)
 *   osc policy encode FILE|-                 base64 -w0 of a policy (checked first), for the pod annotation
 *   osc policy annotate FILE|-               the pod manifest snippet with the encoded policy
 *   osc policy decode BASE64|-               the policy text of an annotation value
 */
import { readFileSync } from 'node:fs';
import {
  AGENT_POLICY_ANNOTATION,
  checkPolicy,
  decodePolicy,
  defaultPolicy,
  deniesExec,
  encodePolicy,
  hardenedPolicy,
  PolicyDecodeError,
} from './policy.ts';

export interface PolicyCommandResult {
  stdout: string;
  stderr: string;
  /** 0 ok, 1 the policy has problems (or the input cannot be read), 2 usage error. */
  code: number;
}

export interface PolicyCommandIO {
  /** Reads a file (default: fs.readFileSync as UTF-8). */
  readFile?: (path: string) => string;
  /** What `-` reads (the CLI passes standard input). */
  stdin?: string;
}

export const POLICY_USAGE = `Usage: osc policy <command> [options]

Kata Agent policy tooling for peer pods: a pod's ${AGENT_POLICY_ANNOTATION} annotation carries a
base64-encoded Rego policy that decides which agent requests the pod VM serves. In production, deny at
least ExecProcessRequest so that oc exec cannot read the pod's data.

Commands:
  default                           print the permissive default policy (development and test only)
  hardened [--allow-exec <cmd>]...  print the recommended production policy; oc exec is allowed only for
           [--no-exec]              the given commands (default: the attestation status command), none with --no-exec
  check <file|-> [--strict]         check a policy (exit 1 on problems; --strict: also on warnings or allowed exec)
  encode <file|->                   print the policy base64-encoded (base64 -w0), for the annotation
  annotate <file|->                 print the pod metadata snippet carrying the encoded policy
  decode <base64|->                 print the policy text of an annotation value

Examples:
  $ osc policy hardened > policy.rego
  $ osc policy check policy.rego
  $ oc annotate pod my-pod ${AGENT_POLICY_ANNOTATION}=$(osc policy encode policy.rego)   # before it is created
`;

const ok = (stdout: string, stderr = ''): PolicyCommandResult => ({ stdout, stderr, code: 0 });
const fail = (stderr: string, code = 1, stdout = ''): PolicyCommandResult => ({ stdout, stderr, code });
const usage = (message: string): PolicyCommandResult => fail(`error: ${message}\n\n${POLICY_USAGE}`, 2);

function readInput(arg: string | undefined, io: PolicyCommandIO, what: string): { text?: string; error?: PolicyCommandResult } {
  if (arg === undefined) return { error: usage(`missing ${what} (a file, or - for standard input)`) };
  if (arg === '-') {
    if (io.stdin === undefined) return { error: fail('error: nothing on standard input\n') };
    return { text: io.stdin };
  }
  try {
    return { text: (io.readFile ?? ((p: string) => readFileSync(p, 'utf8')))(arg) };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory; give the policy file' : (e as Error).message;
    return { error: fail(`error: cannot read ${arg}: ${reason}\n`) };
  }
}

/** The report of `check`, and whether the policy passes. */
function report(text: string, strict: boolean): { lines: string[]; passed: boolean } {
  const c = checkPolicy(text);
  const lines: string[] = [];
  for (const p of c.problems) lines.push(`error: ${p}`);
  for (const w of c.warnings) lines.push(`warning: ${w}`);
  const execDenied = c.issues.some((i) => i.severity === 'fatal') ? undefined : deniesExec(text);
  if (execDenied === false) lines.push('warning: ExecProcessRequest is allowed: oc exec can reach the pod; deny it in production');
  const passed = c.ok && (!strict || (c.warnings.length === 0 && execDenied === true));
  if (c.ok) lines.push(execDenied ? 'policy OK: oc exec is denied (ExecProcessRequest)' : 'policy usable');
  return { lines, passed };
}

/** Runs `osc policy <args>`; never throws, never exits: the caller prints and exits with `code`. */
export function runPolicyCommand(args: readonly string[], io: PolicyCommandIO = {}): PolicyCommandResult {
  const [command, ...rest] = args;
  const flags = rest.filter((a) => a.startsWith('--'));
  const positional = rest.filter((a, i) => !a.startsWith('--') && rest[i - 1] !== '--allow-exec');
  const known: Record<string, string[]> = {
    default: [],
    hardened: ['--allow-exec', '--no-exec'],
    check: ['--strict'],
    encode: [],
    annotate: [],
    decode: [],
  };
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') return ok(POLICY_USAGE);
  const allowed = known[command];
  if (!allowed) return usage(`unknown command "${command}"`);
  const unknownFlag = flags.find((f) => !allowed.includes(f) && f !== '--help');
  if (unknownFlag) return usage(`unknown option ${unknownFlag} for "policy ${command}"`);
  if (flags.includes('--help')) return ok(POLICY_USAGE);
  // Each command reads at most one input: a second one is a mistake (a glob, a missing quote), not ignored.
  if (command !== 'hardened' && command !== 'default' && positional.length > 1) {
    return usage(
      `"policy ${command}" takes one ${command === 'decode' ? 'annotation value' : 'policy'}; unexpected "${positional[1]}" (quote a value with spaces)`,
    );
  }
  if (command === 'default' && positional.length) return usage(`unexpected argument "${positional[0]}"`);

  switch (command) {
    case 'default':
      return ok(defaultPolicy());
    case 'hardened': {
      const commands: string[] = [];
      for (let i = 0; i < rest.length; i++) {
        if (rest[i] !== '--allow-exec') continue;
        const cmd = rest[i + 1];
        if (cmd === undefined || cmd.startsWith('--'))
          return usage('--allow-exec needs a command, like --allow-exec "cat /etc/os-release"');
        commands.push(cmd);
      }
      if (flags.includes('--no-exec') && commands.length) return usage('--no-exec and --allow-exec exclude each other');
      if (positional.length) return usage(`unexpected argument "${positional[0]}"`);
      return ok(
        hardenedPolicy(
          flags.includes('--no-exec') ? { allowedExecCommands: [] } : commands.length ? { allowedExecCommands: commands } : {},
        ),
      );
    }
    case 'check': {
      const { text, error } = readInput(positional[0], io, 'policy');
      if (error) return error;
      const { lines, passed } = report(text as string, flags.includes('--strict'));
      // The findings are the output (on standard output, as linters do); the exit code says pass or fail.
      return { stdout: `${lines.join('\n')}\n`, stderr: '', code: passed ? 0 : 1 };
    }
    case 'encode':
    case 'annotate': {
      const { text, error } = readInput(positional[0], io, 'policy');
      if (error) return error;
      const c = checkPolicy(text as string);
      const fatal = c.issues.filter((i) => i.severity === 'fatal');
      if (fatal.length) {
        return fail(
          `error: the Kata Agent cannot use this policy, so the pod would never start:\n${fatal.map((i) => (i.line > 0 ? `  line ${i.line}: ${i.message}` : `  ${i.message}`)).join('\n')}\n`,
        );
      }
      const notes = report(text as string, false).lines.filter((l) => l.startsWith('warning:') || l.startsWith('error:'));
      const stderr = notes.length ? `${notes.join('\n')}\n` : '';
      const b64 = encodePolicy(text as string);
      if (command === 'encode') return ok(`${b64}\n`, stderr);
      return ok(`metadata:\n  annotations:\n    ${AGENT_POLICY_ANNOTATION}: ${b64}\n`, stderr);
    }
    case 'decode': {
      const arg = positional[0];
      if (arg === undefined) return usage('missing the annotation value (base64, or - for standard input)');
      const value = arg === '-' ? io.stdin : arg;
      if (value === undefined) return fail('error: nothing on standard input\n');
      try {
        return ok(decodePolicy(value));
      } catch (e) {
        if (e instanceof PolicyDecodeError) return fail(`error: ${e.message}\n`);
        throw e;
      }
    }
  }
  return usage(`unknown command "${command}"`);
}
