import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AGENT_REQUESTS,
  checkPolicy,
  decodePolicy,
  defaultPolicy,
  deniesExec,
  encodePolicy,
  hardenedPolicy,
  PolicyDecodeError,
  parsePolicy,
} from '../../src/peerpods/policy.ts';

/** The product documentation's custom policy.rego example, verbatim. */
const SEED_POLICY = `package agent_policy

default AddARPNeighborsRequest := true
default AddSwapRequest := true
default CloseStdinRequest := true
default CopyFileRequest := true
default CreateContainerRequest := true
default CreateSandboxRequest := true
default DestroySandboxRequest := true
default GetMetricsRequest := true
default GetOOMEventRequest := true
default GuestDetailsRequest := true
default ListInterfacesRequest := true
default ListRoutesRequest := true
default MemHotplugByProbeRequest := true
default OnlineCPUMemRequest := true
default PauseContainerRequest := true
default PullImageRequest := true
default ReadStreamRequest := false
default RemoveContainerRequest := true
default RemoveStaleVirtiofsShareMountsRequest := true
default ReseedRandomDevRequest := true
default ResumeContainerRequest := true
default SetGuestDateTimeRequest := true
default SignalProcessRequest := true
default StartContainerRequest := true
default StartTracingRequest := true
default StatsContainerRequest := true
default StopTracingRequest := true
default TtyWinResizeRequest := true
default UpdateContainerRequest := true
default UpdateEphemeralMountsRequest := true
default UpdateInterfaceRequest := true
default UpdateRoutesRequest := true
default WaitProcessRequest := true
default ExecProcessRequest := false
default SetPolicyRequest := false
default WriteStreamRequest := false

ExecProcessRequest if {
    input_command = concat(" ", input.process.Args)
    some allowed_command in policy_data.allowed_commands
    input_command == allowed_command
}

policy_data := {
  "allowed_commands": [
        "curl http://127.0.0.1:8006/cdh/resource/default/attestation-status/status"
  ]
}
`;

/** The default policy with `edit` applied to its text. */
const edited = (edit: (s: string) => string) => edit(defaultPolicy());

describe('generated policies', () => {
  test('the request list is the documented list: 36 names', () => {
    assert.equal(AGENT_REQUESTS.length, 36);
    const seedNames = [...SEED_POLICY.matchAll(/^default (\w+) :=/gm)].map((m) => m[1]).sort();
    assert.deepEqual([...AGENT_REQUESTS].sort(), seedNames);
  });

  test('defaultPolicy allows every request', () => {
    const text = defaultPolicy();
    const lines = text.trimEnd().split('\n');
    assert.equal(lines[0], 'package agent_policy');
    assert.equal(lines[1], '');
    assert.deepEqual(
      lines.slice(2),
      AGENT_REQUESTS.map((r) => `default ${r} := true`),
    );
    assert.deepEqual(checkPolicy(text), { ok: true, problems: [], warnings: [], issues: [] });
    assert.equal(deniesExec(text), false);
  });

  test('hardenedPolicy is the documented example, byte for byte', () => {
    assert.equal(hardenedPolicy(), SEED_POLICY);
    assert.deepEqual(checkPolicy(hardenedPolicy()), { ok: true, problems: [], warnings: [], issues: [] });
    assert.equal(deniesExec(hardenedPolicy()), true);
    assert.equal(deniesExec(SEED_POLICY), true);
  });

  test('hardenedPolicy without exec commands, or with others', () => {
    const none = hardenedPolicy({ allowedExecCommands: [] });
    assert.ok(!none.includes('ExecProcessRequest if'));
    assert.ok(!none.includes('policy_data'));
    assert.ok(none.includes('default ExecProcessRequest := false\n'));
    assert.equal(checkPolicy(none).ok, true);
    assert.equal(deniesExec(none), true);

    const two = hardenedPolicy({ allowedExecCommands: ['cat /etc/os-release', 'echo "hi"'] });
    assert.ok(two.includes('        "cat /etc/os-release",\n        "echo \\"hi\\""\n  ]'));
    assert.deepEqual(checkPolicy(two).problems, []);
    assert.equal(deniesExec(two), true);
  });
});

describe('encodePolicy / decodePolicy', () => {
  test('round trip, like base64 -w0', () => {
    const text = hardenedPolicy();
    const b64 = encodePolicy(text);
    assert.match(b64, /^[A-Za-z0-9+/]+=*$/);
    assert.equal(b64, Buffer.from(text).toString('base64'));
    assert.equal(decodePolicy(b64), text);
    assert.equal(decodePolicy(encodePolicy('package agent_policy # é ✓\n')), 'package agent_policy # é ✓\n');
  });
  test('base64 wrapped at 76 columns (base64 without -w0) is accepted', () => {
    const b64 = encodePolicy(defaultPolicy());
    const wrapped = b64.replace(/(.{76})/g, '$1\n');
    assert.ok(wrapped.includes('\n'));
    assert.equal(decodePolicy(wrapped), defaultPolicy());
  });
  const bad: [string, string, string][] = [
    ['empty', '', 'the policy annotation is empty; set it to the output of base64 -w0 policy.rego'],
    [
      'plain Rego',
      'package agent_policy\ndefault X := true',
      'the policy annotation holds plain Rego, not base64; set it to the output of base64 -w0 policy.rego',
    ],
    ['not base64', 'not*base64!', 'the policy annotation is not valid base64; set it to the output of base64 -w0 policy.rego'],
    ['bad padding', 'cGFja2FnZQ', 'the policy annotation is not valid base64; set it to the output of base64 -w0 policy.rego'],
    [
      'not UTF-8',
      Buffer.from([0xff, 0xfe, 0x00, 0x41]).toString('base64'),
      'the policy annotation does not decode to UTF-8 text; set it to the output of base64 -w0 policy.rego',
    ],
  ];
  for (const [name, value, message] of bad) {
    test(`rejects ${name}`, () =>
      assert.throws(
        () => decodePolicy(value),
        (e: unknown) => e instanceof PolicyDecodeError && e.message === message,
      ));
  }
});

describe('checkPolicy: bad policies', () => {
  const cases: { name: string; text: string; problems: string[] }[] = [
    { name: 'empty', text: '  \n', problems: ['the policy is empty; it must start with "package agent_policy"'] },
    {
      name: 'no package',
      text: 'default ExecProcessRequest := false\n',
      problems: ['the policy has no package line; it must start with "package agent_policy"'],
    },
    {
      name: 'another package',
      text: edited((s) => s.replace('package agent_policy', 'package policy')),
      problems: ['line 1: package is "policy": the Kata Agent reads only package agent_policy; write "package agent_policy"'],
    },
    {
      name: 'a policy that denies CreateSandboxRequest (the pod could never start: refused like a missing package line)',
      text: edited((s) => s.replace('default CreateSandboxRequest := true', 'default CreateSandboxRequest := false')),
      problems: [
        'line 8: CreateSandboxRequest is false and no rule allows it: the agent refuses it, so no pod can start; write "default CreateSandboxRequest := true"',
      ],
    },
    {
      name: 'a policy without StartContainerRequest',
      text: edited((s) => s.replace('default StartContainerRequest := true\n', '')),
      problems: [
        'StartContainerRequest is not defined and no rule allows it: the agent refuses it, so no pod can start; write "default StartContainerRequest := true"',
      ],
    },
    {
      name: 'package not first',
      text: 'default ExecProcessRequest := false\npackage agent_policy\n',
      problems: ['line 2: the package line must come first'],
    },
    {
      name: 'two package lines',
      text: 'package agent_policy\npackage agent_policy\n',
      problems: ['line 2: a second package line; a policy has exactly one'],
    },
    {
      name: 'a duplicate default',
      text: `${defaultPolicy()}default ExecProcessRequest := false\n`,
      problems: ['line 39: second default for ExecProcessRequest (the first is on line 10); a name has at most one default, remove one'],
    },
    {
      name: 'a quoted boolean',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProcessRequest := "false"')),
      problems: ['line 10: default ExecProcessRequest is "false": it must be true or false; write false without quotes'],
    },
    {
      name: 'a capitalised boolean',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProcessRequest := False')),
      problems: ['line 10: default ExecProcessRequest is False: it must be true or false; write false in lower case'],
    },
    {
      name: 'a number',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProcessRequest := 0')),
      problems: ['line 10: default ExecProcessRequest is 0: it must be true or false'],
    },
    {
      name: 'an object for a request other than CreateContainerRequest',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProcessRequest := {"allowed": false}')),
      problems: ['line 10: default ExecProcessRequest is an object: only CreateContainerRequest may be one; use true or false'],
    },
    {
      name: 'a malformed default',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProcessRequest false')),
      problems: [
        'line 10: malformed default rule "default ExecProcessRequest false"; write "default <Request> := true" or "default <Request> := false"',
      ],
    },
    {
      name: 'a misspelt request name',
      text: edited((s) => s.replace('default ExecProcessRequest := true', 'default ExecProccessRequest := false')),
      problems: [
        'line 10: ExecProccessRequest is not a Kata Agent request, so the agent never consults it; did you mean ExecProcessRequest?',
      ],
    },
    {
      name: 'an unknown request name',
      text: `${defaultPolicy()}default LaunchMissilesRequest := false\n`,
      problems: ['line 39: LaunchMissilesRequest is not a Kata Agent request, so the agent never consults it'],
    },
    {
      name: 'an unclosed brace',
      text: `${defaultPolicy()}ExecProcessRequest if {\n    input.process.Args[0] == "ls"\n`,
      problems: ['line 39: "{" opened here is never closed'],
    },
    {
      name: 'a stray closing brace',
      text: `${defaultPolicy()}}\n`,
      problems: ['line 39: unexpected "}": nothing is open here'],
    },
    {
      name: 'mismatched brackets',
      text: `${defaultPolicy()}policy_data := {\n  "a": [1, 2}\n}\n`,
      problems: ['line 40: "}" does not match "[" opened on line 40'],
    },
    {
      name: 'an unterminated string',
      text: `${defaultPolicy()}policy_data := {"a": "b}\n`,
      problems: ['line 39: unterminated string: a "..." string must end on its line', 'line 39: "{" opened here is never closed'],
    },
    {
      name: 'an unterminated raw string',
      text: `${defaultPolicy()}policy_data := \`abc\n`,
      problems: ['line 39: unterminated raw string: the ` opened here is never closed'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const r = checkPolicy(c.text);
      assert.deepEqual(r.problems, c.problems);
      assert.equal(r.ok, false);
    });
  }
});

describe('checkPolicy: warnings and accepted forms', () => {
  test('missing requests: the agent denies them', () => {
    const r = checkPolicy(
      'package agent_policy\n\ndefault ExecProcessRequest := false\ndefault CreateContainerRequest := true\ndefault CreateSandboxRequest := true\ndefault StartContainerRequest := true\n',
    );
    assert.equal(r.ok, true);
    assert.equal(r.warnings.length, 1);
    assert.match(r.warnings[0] ?? '', /^no rule for AddARPNeighborsRequest, AddSwapRequest, .*, WriteStreamRequest: the agent denies them/);
    assert.ok(!(r.warnings[0] ?? '').includes('ExecProcessRequest'));
    assert.ok(!(r.warnings[0] ?? '').includes('CreateContainerRequest,'));
  });
  test('a request with only a rule counts as defined', () => {
    const text = edited((s) =>
      s.replace('default GuestDetailsRequest := true\n', 'GuestDetailsRequest if {\n    input.mem_block_size == true\n}\n'),
    );
    assert.deepEqual(checkPolicy(text), { ok: true, problems: [], warnings: [], issues: [] });
  });
  test('AllowRequestsFailingPolicy := true is a warning and makes exec possible', () => {
    const text = 'package agent_policy\ndefault AllowRequestsFailingPolicy := true\n';
    const r = checkPolicy(text);
    assert.equal(r.ok, true);
    assert.deepEqual(r.warnings, [
      'line 2: AllowRequestsFailingPolicy is true: the agent serves every request the policy denies; use it only for debugging',
    ]);
    assert.equal(deniesExec(text), false);
    assert.equal(deniesExec(`${hardenedPolicy()}default AllowRequestsFailingPolicy = true\n`), false);
  });
  test('an object default for CreateContainerRequest (newer agents), = instead of :=, imports, comments, old-style rules', () => {
    const text = [
      '# my policy { not a brace',
      'package agent_policy',
      '',
      'import future.keywords.in',
      'import rego.v1',
      '',
      'default CreateContainerRequest := {"allowed": false, "ops": []}',
      ...AGENT_REQUESTS.filter((r) => r !== 'CreateContainerRequest' && r !== 'StartContainerRequest').map(
        (r) => `default ${r} = ${r === 'ExecProcessRequest' || r === 'CreateSandboxRequest'} # trailing } comment`,
      ),
      'default AllowRequestsFailingPolicy := false',
      'StartContainerRequest {',
      '    input.container_id != "}"',
      '    x := `raw { string',
      '    over lines }`',
      '}',
      'allow_thing(x) if {',
      '    x == "#"',
      '}',
      'default helper_flag := 3',
    ].join('\n');
    const r = checkPolicy(text);
    assert.deepEqual(r, { ok: true, problems: [], warnings: [], issues: [] });
    const p = parsePolicy(text);
    assert.equal(p.package, 'agent_policy');
    assert.deepEqual(
      p.rules.map((x) => [x.name, x.line]),
      [
        ['StartContainerRequest', 43],
        ['allow_thing', 48],
      ],
    );
    assert.equal(p.defaults.find((d) => d.name === 'ExecProcessRequest')?.bool, true);
    assert.equal(deniesExec(text), false);
  });
  test('an unrecognised top-level line is a warning', () => {
    const r = checkPolicy(`${defaultPolicy()}this is not rego\n`);
    assert.equal(r.ok, true);
    assert.deepEqual(r.warnings, ['line 39: not checked: "this is not rego" is not a package, import, default or rule head']);
  });
  test('a PascalCase name close to a request is a warning', () => {
    const r = checkPolicy(`${defaultPolicy()}default ExecProcessRequests := false\n`);
    assert.equal(r.ok, true);
    assert.deepEqual(r.warnings, ['line 39: ExecProcessRequests is not a Kata Agent request; did you mean ExecProcessRequest?']);
  });
  test('CRLF line endings', () => {
    assert.deepEqual(checkPolicy(hardenedPolicy().replace(/\n/g, '\r\n')).problems, []);
    assert.equal(deniesExec(hardenedPolicy().replace(/\n/g, '\r\n')), true);
  });
});

describe('deniesExec', () => {
  const cases: [string, string, boolean][] = [
    ['the default policy', defaultPolicy(), false],
    ['the hardened policy', hardenedPolicy(), true],
    ['exec default false', edited((s) => s.replace('ExecProcessRequest := true', 'ExecProcessRequest := false')), true],
    ['exec default false with = ', edited((s) => s.replace('ExecProcessRequest := true', 'ExecProcessRequest = false')), true],
    ['exec undefined (no default, no rule)', edited((s) => s.replace('default ExecProcessRequest := true\n', '')), true],
    [
      'exec default false but a rule always allows',
      edited((s) => s.replace('ExecProcessRequest := true', 'ExecProcessRequest := false\nExecProcessRequest := true')),
      false,
    ],
    [
      'exec default false but an always-true body',
      edited((s) => s.replace('ExecProcessRequest := true', 'ExecProcessRequest := false\nExecProcessRequest if { true }')),
      false,
    ],
    [
      'exec allowed only for some commands',
      edited((s) =>
        s.replace('ExecProcessRequest := true', 'ExecProcessRequest := false\nExecProcessRequest if {\n  input.process.Args[0] == "ls"\n}'),
      ),
      true,
    ],
    ['a policy the agent cannot use', 'package other\ndefault ExecProcessRequest := false\n', false],
    ['a non-boolean exec default', 'package agent_policy\ndefault ExecProcessRequest := "false"\n', false],
  ];
  for (const [name, text, want] of cases) test(name, () => assert.equal(deniesExec(text), want));
});
