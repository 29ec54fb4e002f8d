import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodePolicy, defaultPolicy, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';
import { POLICY_USAGE, runPolicyCommand } from '../../src/peerpods/policy-cli.ts';

const files: Record<string, string> = {
  'hardened.rego': hardenedPolicy(),
  'default.rego': defaultPolicy(),
  'broken.rego': 'package agent_policy\n\ndefault ExecProcessRequest := false\n\nExecProcessRequest if {\n',
  'typo.rego': `${hardenedPolicy()}\ndefault ExecProccessRequest := false\n`,
};
const io = {
  readFile: (p: string) => {
    const t = files[p];
    if (t === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
    return t;
  },
};
const run = (...args: string[]) => runPolicyCommand(args, io);

describe('osc policy (runPolicyCommand)', () => {
  test('default and hardened print the documented policies', () => {
    assert.deepEqual(run('default'), { stdout: defaultPolicy(), stderr: '', code: 0 });
    assert.deepEqual(run('hardened'), { stdout: hardenedPolicy(), stderr: '', code: 0 });
    assert.equal(run('hardened', '--no-exec').stdout, hardenedPolicy({ allowedExecCommands: [] }));
    assert.equal(
      run('hardened', '--allow-exec', 'cat /etc/os-release', '--allow-exec', 'uptime').stdout,
      hardenedPolicy({ allowedExecCommands: ['cat /etc/os-release', 'uptime'] }),
    );
    assert.equal(run('hardened', '--allow-exec').code, 2);
    assert.equal(run('hardened', '--no-exec', '--allow-exec', 'x').code, 2);
  });

  test('check: OK for the recommended policy; exec allowed is a warning (an error with --strict); broken is an error', () => {
    const good = run('check', 'hardened.rego');
    assert.equal(good.code, 0);
    assert.equal(good.stdout, 'policy OK: oc exec is denied (ExecProcessRequest)\n');

    const permissive = run('check', 'default.rego');
    assert.equal(permissive.code, 0);
    assert.match(permissive.stdout, /warning: ExecProcessRequest is allowed: oc exec can reach the pod; deny it in production/);
    assert.equal(run('check', 'default.rego', '--strict').code, 1);

    const broken = run('check', 'broken.rego');
    assert.equal(broken.code, 1);
    assert.match(broken.stdout, /^error: line 5: "\{" opened here is never closed$/m);

    const typo = run('check', 'typo.rego');
    assert.equal(typo.code, 1);
    assert.match(typo.stdout, /ExecProccessRequest is not a Kata Agent request.*did you mean ExecProcessRequest\?/);
  });

  test('encode and annotate: base64 -w0 of a usable policy; decode reverses it', () => {
    const enc = run('encode', 'hardened.rego');
    assert.equal(enc.code, 0);
    assert.equal(enc.stdout, `${encodePolicy(hardenedPolicy())}\n`);
    assert.equal(decodePolicy(enc.stdout.trim()), hardenedPolicy());
    assert.equal(run('decode', enc.stdout.trim()).stdout, hardenedPolicy());

    const permissive = run('encode', 'default.rego');
    assert.equal(permissive.code, 0);
    assert.match(permissive.stderr, /warning: ExecProcessRequest is allowed/);

    const refused = run('encode', 'broken.rego');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /the Kata Agent cannot use this policy, so the pod would never start:\n {2}line 5:/);

    const ann = run('annotate', 'hardened.rego');
    assert.equal(ann.stdout, `metadata:\n  annotations:\n    io.katacontainers.config.agent.policy: ${encodePolicy(hardenedPolicy())}\n`);
  });

  test('standard input with -', () => {
    const r = runPolicyCommand(['encode', '-'], { stdin: defaultPolicy() });
    assert.equal(r.stdout.trim(), encodePolicy(defaultPolicy()));
    assert.equal(runPolicyCommand(['decode', '-'], { stdin: encodePolicy('package agent_policy\n') }).stdout, 'package agent_policy\n');
    assert.equal(runPolicyCommand(['check', '-'], {}).code, 1);
  });

  test('errors: usage (2), unreadable input or bad base64 (1)', () => {
    assert.deepEqual(run(), { stdout: POLICY_USAGE, stderr: '', code: 0 });
    assert.equal(run('frobnicate').code, 2);
    assert.match(run('frobnicate').stderr, /^error: unknown command "frobnicate"/);
    assert.equal(run('check', '--bogus', 'x').code, 2);
    assert.equal(run('check').code, 2);
    const missing = run('check', 'nope.rego');
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'error: cannot read nope.rego: no such file\n');
    const bad = run('decode', 'package agent_policy');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /plain Rego, not base64/);
  });
});
