/**
 * Kata Agent policy tooling (docs/peerpods.md, "Kata Agent policy"). A pod's `io.katacontainers.config.agent.policy` annotation
 * carries a base64-encoded Rego policy, `package agent_policy`, with one rule per agent API request; the
 * agent asks `data.agent_policy.<Request>` before serving each request.
 *
 * This is a careful line-based reader of the subset of Rego such policies are made of: `package`, `import`,
 * `default <Name> := <value>` and the heads of other rules; rule bodies, objects and arrays are skipped by
 * bracket matching (strings, raw strings and comments understood). It is not a Rego implementation.
 *
 * What the agent does with a policy (and so what is checked):
 *  - a request whose rule is undefined fails: no default and no matching rule means the request is denied;
 *  - a default must be a boolean (newer agents also accept an object for CreateContainerRequest);
 *  - two defaults for one name, a wrong package, or unbalanced brackets make the policy unusable, and the
 *    pod never starts;
 *  - `default AllowRequestsFailingPolicy := true` lets through every request the policy denies.
 */

export const AGENT_POLICY_ANNOTATION = 'io.katacontainers.config.agent.policy';
export const POLICY_PACKAGE = 'agent_policy';

/** The requests every pod needs to start: a policy that always refuses one of them is refused itself. */
export const STARTUP_REQUESTS: readonly string[] = Object.freeze([
  'CreateSandboxRequest',
  'CreateContainerRequest',
  'StartContainerRequest',
]);

/** Every agent API request the product documents, alphabetically. */
export const AGENT_REQUESTS: readonly string[] = Object.freeze([
  'AddARPNeighborsRequest',
  'AddSwapRequest',
  'CloseStdinRequest',
  'CopyFileRequest',
  'CreateContainerRequest',
  'CreateSandboxRequest',
  'DestroySandboxRequest',
  'ExecProcessRequest',
  'GetMetricsRequest',
  'GetOOMEventRequest',
  'GuestDetailsRequest',
  'ListInterfacesRequest',
  'ListRoutesRequest',
  'MemHotplugByProbeRequest',
  'OnlineCPUMemRequest',
  'PauseContainerRequest',
  'PullImageRequest',
  'ReadStreamRequest',
  'RemoveContainerRequest',
  'RemoveStaleVirtiofsShareMountsRequest',
  'ReseedRandomDevRequest',
  'ResumeContainerRequest',
  'SetGuestDateTimeRequest',
  'SetPolicyRequest',
  'SignalProcessRequest',
  'StartContainerRequest',
  'StartTracingRequest',
  'StatsContainerRequest',
  'StopTracingRequest',
  'TtyWinResizeRequest',
  'UpdateContainerRequest',
  'UpdateEphemeralMountsRequest',
  'UpdateInterfaceRequest',
  'UpdateRoutesRequest',
  'WaitProcessRequest',
  'WriteStreamRequest',
]);

/** Names newer Kata agents also consult; accepted in a policy, not part of the documented default. */
export const OTHER_AGENT_POLICY_NAMES: readonly string[] = Object.freeze([
  'AllowRequestsFailingPolicy',
  'GetIPTablesRequest',
  'MemAgentCompactConfig',
  'MemAgentMemcgConfig',
  'ResizeVolumeRequest',
  'SetIPTablesRequest',
  'VolumeStatsRequest',
]);

const KNOWN_NAMES = new Set([...AGENT_REQUESTS, ...OTHER_AGENT_POLICY_NAMES]);

/** The requests the documented production policy denies. */
export const HARDENED_DENIED: readonly string[] = Object.freeze([
  'ReadStreamRequest',
  'ExecProcessRequest',
  'SetPolicyRequest',
  'WriteStreamRequest',
]);

/** The one command the documented production policy still lets `oc exec` run (the attestation status). */
export const SEED_ALLOWED_EXEC_COMMANDS: readonly string[] = Object.freeze([
  'curl http://127.0.0.1:8006/cdh/resource/default/attestation-status/status',
]);

/** The permissive default policy: every documented request allowed. For development and test only. */
export function defaultPolicy(): string {
  return [`package ${POLICY_PACKAGE}`, '', ...AGENT_REQUESTS.map((r) => `default ${r} := true`), ''].join('\n');
}

/**
 * The production policy the product documentation recommends (its example, byte for byte with the default options):
 * ExecProcessRequest, ReadStreamRequest, SetPolicyRequest and WriteStreamRequest denied, and `oc exec`
 * allowed only for `allowedExecCommands` (default: the attestation status command; `[]` drops the rule).
 * Note that denying ReadStreamRequest also stops `oc logs` from reading the containers' output.
 */
export function hardenedPolicy(options: { allowedExecCommands?: readonly string[] } = {}): string {
  const commands = options.allowedExecCommands ?? SEED_ALLOWED_EXEC_COMMANDS;
  const lastDenied = ['ExecProcessRequest', 'SetPolicyRequest', 'WriteStreamRequest'];
  const lines = [`package ${POLICY_PACKAGE}`, ''];
  for (const r of AGENT_REQUESTS) if (!lastDenied.includes(r)) lines.push(`default ${r} := ${!HARDENED_DENIED.includes(r)}`);
  for (const r of lastDenied) lines.push(`default ${r} := false`);
  if (commands.length > 0) {
    lines.push(
      '',
      'ExecProcessRequest if {',
      '    input_command = concat(" ", input.process.Args)',
      '    some allowed_command in policy_data.allowed_commands',
      '    input_command == allowed_command',
      '}',
      '',
      'policy_data := {',
      '  "allowed_commands": [',
      commands.map((c) => `        ${JSON.stringify(c)}`).join(',\n'),
      '  ]',
      '}',
    );
  }
  lines.push('');
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Encoding

export class PolicyDecodeError extends Error {}

/** Base64 of the UTF-8 text, as `base64 -w0 policy.rego` prints it. */
export function encodePolicy(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** The policy text of an annotation value. Line breaks in the base64 (from `base64` without -w0) are allowed. */
export function decodePolicy(b64: string): string {
  const compact = b64.replace(/\s+/g, '');
  if (compact === '') throw new PolicyDecodeError('the policy annotation is empty; set it to the output of base64 -w0 policy.rego');
  if (/^package\s/.test(b64.trimStart())) {
    throw new PolicyDecodeError('the policy annotation holds plain Rego, not base64; set it to the output of base64 -w0 policy.rego');
  }
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw new PolicyDecodeError('the policy annotation is not valid base64; set it to the output of base64 -w0 policy.rego');
  }
  const bytes = Buffer.from(compact, 'base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new PolicyDecodeError('the policy annotation does not decode to UTF-8 text; set it to the output of base64 -w0 policy.rego');
  }
}

// ---------------------------------------------------------------------------------------------------------
// Reading

export interface PolicyIssue {
  /** 1-based line, or 0 for the policy as a whole. */
  line: number;
  /**
   * fatal: the agent cannot use the policy, so the pod never starts; error: the policy is usable but almost
   * certainly not what was meant (a misspelt request name); warning: worth knowing.
   */
  severity: 'fatal' | 'error' | 'warning';
  message: string;
}

export interface PolicyDefault {
  name: string;
  line: number;
  /** The value as written. */
  value: string;
  /** The boolean, when the value is one. */
  bool?: boolean;
}

export interface PolicyRule {
  name: string;
  line: number;
  /** `X := true`, `X = true`, `X if { true }`, `X { true }`: the rule always allows. */
  alwaysTrue: boolean;
}

export interface ParsedPolicy {
  package?: string;
  defaults: PolicyDefault[];
  rules: PolicyRule[];
  issues: PolicyIssue[];
}

interface Line {
  number: number;
  /** The code without its comment. */
  code: string;
  /** Bracket depth at the start of the line. */
  depth: number;
}

const OPEN: Record<string, string> = { '{': '}', '[': ']', '(': ')' };
const CLOSE = new Set(['}', ']', ')']);

/** Splits the text into lines, tracking bracket depth, strings and comments. */
function scan(text: string, issues: PolicyIssue[]): Line[] {
  const out: Line[] = [];
  const stack: { ch: string; line: number }[] = [];
  let inRaw = false;
  let rawLine = 0;
  const rows = text.split(/\r?\n/);
  rows.forEach((row, i) => {
    const number = i + 1;
    const depth = stack.length + (inRaw ? 1 : 0);
    let code = '';
    let inStr = false;
    for (let j = 0; j < row.length; j++) {
      const ch = row[j] as string;
      if (inRaw) {
        code += ch;
        if (ch === '`') inRaw = false;
        continue;
      }
      if (inStr) {
        code += ch;
        if (ch === '\\') {
          code += row[j + 1] ?? '';
          j++;
        } else if (ch === '"') inStr = false;
        continue;
      }
      if (ch === '#') break;
      code += ch;
      if (ch === '"') inStr = true;
      else if (ch === '`') {
        inRaw = true;
        rawLine = number;
      } else if (ch in OPEN) stack.push({ ch, line: number });
      else if (CLOSE.has(ch)) {
        const top = stack.pop();
        if (!top) issues.push({ line: number, severity: 'fatal', message: `unexpected ${JSON.stringify(ch)}: nothing is open here` });
        else if (OPEN[top.ch] !== ch) {
          issues.push({
            line: number,
            severity: 'fatal',
            message: `${JSON.stringify(ch)} does not match ${JSON.stringify(top.ch)} opened on line ${top.line}`,
          });
        }
      }
    }
    if (inStr) issues.push({ line: number, severity: 'fatal', message: 'unterminated string: a "..." string must end on its line' });
    out.push({ number, code: code.trim(), depth });
  });
  if (inRaw) issues.push({ line: rawLine, severity: 'fatal', message: 'unterminated raw string: the ` opened here is never closed' });
  for (const open of stack) {
    issues.push({ line: open.line, severity: 'fatal', message: `${JSON.stringify(open.ch)} opened here is never closed` });
  }
  return out;
}

function levenshtein(a: string, b: string): number {
  const d: number[] = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0] as number;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j] as number;
      d[j] = Math.min((d[j] as number) + 1, (d[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length] as number;
}

/** The known name closest to `name`, if it is close enough to be a typo. */
export function closestName(name: string, candidates: Iterable<string>, maxDistance = 3): string | undefined {
  let best: string | undefined;
  let bestD = maxDistance + 1;
  for (const c of candidates) {
    const dist = levenshtein(name.toLowerCase(), c.toLowerCase());
    if (dist < bestD) {
      best = c;
      bestD = dist;
    }
  }
  return best;
}

const IDENT = '[A-Za-z_][A-Za-z0-9_]*';

/** Reports a name that looks like an agent request (or policy name) but is not one the agent knows. */
function checkName(name: string, line: number, issues: PolicyIssue[]): void {
  if (KNOWN_NAMES.has(name)) return;
  const guess = closestName(name, KNOWN_NAMES);
  const hint = guess ? `; did you mean ${guess}?` : '';
  if (/Request$/.test(name)) {
    issues.push({ line, severity: 'error', message: `${name} is not a Kata Agent request, so the agent never consults it${hint}` });
  } else if (/^[A-Z]/.test(name) && guess) {
    issues.push({ line, severity: 'warning', message: `${name} is not a Kata Agent request${hint}` });
  }
}

/** Reads a policy: its package, defaults and rule heads, and every problem found on the way. */
export function parsePolicy(text: string): ParsedPolicy {
  const issues: PolicyIssue[] = [];
  const result: ParsedPolicy = { defaults: [], rules: [], issues };
  if (text.trim() === '') {
    issues.push({ line: 0, severity: 'fatal', message: `the policy is empty; it must start with "package ${POLICY_PACKAGE}"` });
    return result;
  }
  const lines = scan(text, issues);
  let statements = 0;
  const seen = new Map<string, number>();
  for (const { number, code, depth } of lines) {
    if (depth > 0 || code === '') continue;
    statements++;
    let m: RegExpExecArray | null;
    if ((m = /^package\s+(\S+)$/.exec(code))) {
      const pkg = m[1] as string;
      if (result.package !== undefined) {
        issues.push({ line: number, severity: 'fatal', message: 'a second package line; a policy has exactly one' });
      } else {
        result.package = pkg;
        if (statements !== 1) issues.push({ line: number, severity: 'fatal', message: 'the package line must come first' });
        if (pkg !== POLICY_PACKAGE) {
          issues.push({
            line: number,
            severity: 'fatal',
            message: `package is ${JSON.stringify(pkg)}: the Kata Agent reads only package ${POLICY_PACKAGE}; write "package ${POLICY_PACKAGE}"`,
          });
        }
      }
      continue;
    }
    if (/^import\s+\S/.test(code)) continue;
    if (/^default\b/.test(code)) {
      m = new RegExp(`^default\\s+(${IDENT})\\s*(:=|=)\\s*(.+)$`).exec(code);
      if (!m) {
        issues.push({
          line: number,
          severity: 'fatal',
          message: `malformed default rule ${JSON.stringify(code)}; write "default <Request> := true" or "default <Request> := false"`,
        });
        continue;
      }
      const name = m[1] as string;
      const value = (m[3] as string).trim();
      const def: PolicyDefault = { name, line: number, value };
      if (value === 'true' || value === 'false') def.bool = value === 'true';
      result.defaults.push(def);
      const first = seen.get(name);
      if (first !== undefined) {
        issues.push({
          line: number,
          severity: 'fatal',
          message: `second default for ${name} (the first is on line ${first}); a name has at most one default, remove one`,
        });
      } else seen.set(name, number);
      checkName(name, number, issues);
      if (def.bool === undefined && (KNOWN_NAMES.has(name) || /Request$/.test(name))) {
        checkDefaultValue(name, value, number, issues);
      }
      continue;
    }
    m = new RegExp(`^(${IDENT})\\s*(.*)$`).exec(code);
    const head = m?.[1];
    const rest = (m?.[2] ?? '').trim();
    if (m && head && /^(if\b|\{|:=|=(?!=)|contains\b|\[|\(|else\b)/.test(rest)) {
      result.rules.push({ name: head, line: number, alwaysTrue: /^((:=|=)\s*true|(if\s*)?\{\s*true\s*\}|if\s+true)$/.test(rest) });
      checkName(head, number, issues);
      continue;
    }
    issues.push({
      line: number,
      severity: 'warning',
      message: `not checked: ${JSON.stringify(code.slice(0, 60))} is not a package, import, default or rule head`,
    });
  }
  if (result.package === undefined) {
    issues.push({ line: 0, severity: 'fatal', message: `the policy has no package line; it must start with "package ${POLICY_PACKAGE}"` });
  }
  return result;
}

function checkDefaultValue(name: string, value: string, line: number, issues: PolicyIssue[]): void {
  const lower = value.replace(/^"(.*)"$/, '$1').toLowerCase();
  let fix = '';
  if (/^".*"$/.test(value) && (lower === 'true' || lower === 'false')) fix = `; write ${lower} without quotes`;
  else if (lower === 'true' || lower === 'false') fix = `; write ${lower} in lower case`;
  if (!fix && value.startsWith('{')) {
    // Newer agents take {"allowed": bool, "ops": [...]} for CreateContainerRequest.
    if (name === 'CreateContainerRequest') return;
    issues.push({
      line,
      severity: 'fatal',
      message: `default ${name} is an object: only CreateContainerRequest may be one; use true or false`,
    });
    return;
  }
  issues.push({ line, severity: 'fatal', message: `default ${name} is ${value}: it must be true or false${fix}` });
}

/** The default value for `name` and whether a rule always allows it. */
function decision(p: ParsedPolicy, name: string): { def?: boolean; defined: boolean; alwaysTrue: boolean; hasRules: boolean } {
  const def = p.defaults.find((d) => d.name === name);
  const rules = p.rules.filter((r) => r.name === name);
  return {
    def: def?.bool,
    defined: def !== undefined || rules.length > 0,
    alwaysTrue: rules.some((r) => r.alwaysTrue),
    hasRules: rules.length > 0,
  };
}

function allowsFailures(p: ParsedPolicy): boolean {
  return decision(p, 'AllowRequestsFailingPolicy').def === true || decision(p, 'AllowRequestsFailingPolicy').alwaysTrue;
}

export interface PolicyCheck {
  /** No fatal problem and no error. */
  ok: boolean;
  /** Fatal problems and errors, `line N: ...`. */
  problems: string[];
  /** Warnings, `line N: ...`. */
  warnings: string[];
  /** Everything found, with severities. */
  issues: PolicyIssue[];
}

function render(i: PolicyIssue): string {
  return i.line > 0 ? `line ${i.line}: ${i.message}` : i.message;
}

/** Checks a policy text (not base64). */
export function checkPolicy(text: string): PolicyCheck {
  const p = parsePolicy(text);
  const issues = [...p.issues];
  if (!issues.some((i) => i.severity === 'fatal')) {
    const failOpen = allowsFailures(p);
    if (failOpen) {
      const line = p.defaults.find((d) => d.name === 'AllowRequestsFailingPolicy')?.line ?? 0;
      issues.push({
        line,
        severity: 'warning',
        message: 'AllowRequestsFailingPolicy is true: the agent serves every request the policy denies; use it only for debugging',
      });
    } else {
      // One rule for what the webhook refuses: a policy with which the pod can never start. That is a
      // policy the agent cannot read (no package line...), and as much one that refuses a request every
      // pod needs to start.
      for (const name of STARTUP_REQUESTS) {
        const d = decision(p, name);
        if (d.hasRules || d.def === true || (d.def === undefined && d.defined)) continue;
        issues.push({
          line: p.defaults.find((x) => x.name === name)?.line ?? 0,
          severity: 'fatal',
          message: `${name} is ${d.defined ? 'false' : 'not defined'} and no rule allows it: the agent refuses it, so no pod can start; write "default ${name} := true"`,
        });
      }
      const missing = AGENT_REQUESTS.filter((r) => !decision(p, r).defined && !STARTUP_REQUESTS.includes(r));
      if (missing.length > 0) {
        issues.push({
          line: 0,
          severity: 'warning',
          message:
            `no rule for ${missing.join(', ')}: the agent denies ${missing.length === 1 ? 'it' : 'them'} ` +
            '(a custom policy replaces the default entirely; start from the default policy)',
        });
      }
    }
  }
  issues.sort((a, b) => a.line - b.line);
  const problems = issues.filter((i) => i.severity !== 'warning').map(render);
  const warnings = issues.filter((i) => i.severity === 'warning').map(render);
  return { ok: problems.length === 0, problems, warnings, issues };
}

/**
 * Whether the policy stops `oc exec`: ExecProcessRequest defaults to false (or is undefined) and no rule
 * always allows it, and AllowRequestsFailingPolicy is not true. Rules that allow exec only under
 * conditions (like the documented policy's allowed_commands) still count as denying. A policy the agent cannot use
 * (fatal problems) does not count.
 */
export function deniesExec(text: string): boolean {
  const p = parsePolicy(text);
  if (p.issues.some((i) => i.severity === 'fatal')) return false;
  if (allowsFailures(p)) return false;
  const d = decision(p, 'ExecProcessRequest');
  if (d.def === true || d.alwaysTrue) return false;
  const def = p.defaults.find((x) => x.name === 'ExecProcessRequest');
  if (def && def.bool === undefined) return false;
  return true;
}
