/**
 * Bad input that needs no cluster, as one table: CLI flags and arguments, peer-pods-cm and
 * peer-pods-secret, kata-remote pod annotations and resources, Kata Agent policies. Each row is the input
 * and the message it must get, naming what is wrong and how to fix it; none may throw or hang. (The rows
 * that need a cluster are in test/integration/bad-input.test.ts; the older per-area tables stay where they
 * are: test/unit/peerpods-*.test.ts, cli-program.test.ts.)
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import type { ConfigMap, Pod, Secret } from '../../src/kube/resources.ts';
import { formatProblems, validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import {
  DEFAULT_MEMORY_ANNOTATION,
  DEFAULT_VCPUS_ANNOTATION,
  MACHINE_TYPE_ANNOTATION,
  type MutateSettings,
  mutatePeerPod,
} from '../../src/peerpods/mutate.ts';
import { AGENT_POLICY_ANNOTATION, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';
import { runPolicyCommand } from '../../src/peerpods/policy-cli.ts';
import { runOsc } from '../support/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'osc-bad-input-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const EMPTY = file('empty', '');
const NOT_YAML = file('not-yaml', 'this: is: not: yaml: [');
const NO_CLUSTER = file('no-cluster', 'apiVersion: v1\nkind: Config\n');
const BAD_SERVER = file(
  'bad-server',
  'apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: x, cluster: {server: "api.example.com:6443"}}]\ncontexts: [{name: c, context: {cluster: x, user: u}}]\nusers: [{name: u, user: {token: t}}]\n',
);
const A_DIR = join(dir, 'a-directory');
mkdirSync(A_DIR);
const A_FILE = file('a-file', '');

type Area = 'CLI' | 'peer-pods-cm' | 'peer-pods-secret' | 'pod annotations' | 'pod resources' | 'policy';

/** One bad input, and what must come of it: a non-zero exit or a refusal, with these messages. */
interface Row {
  name: string;
  area: Area;
  run: () => Promise<{ refused: boolean; message: string }> | { refused: boolean; message: string };
  expect: RegExp[];
}

const osc = (args: string[]) => async () => {
  const r = await runOsc(args);
  return { refused: r.code !== 0, message: r.stderr };
};
const policy = (args: string[], stdin?: string) => () => {
  const r = runPolicyCommand(args, { stdin });
  return { refused: r.code !== 0, message: r.stderr + r.stdout };
};

// --- peer-pods-cm and peer-pods-secret --------------------------------------------------------------------
const b64 = (s: string) => Buffer.from(s).toString('base64');
const GOOD_CM: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium,t3.large',
  PODVM_AMI_ID: '',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0123456789abcdef0',
  AWS_VPC_ID: 'vpc-0123456789abcdef0',
  AWS_SG_IDS: 'sg-0123456789abcdef0',
  TAGS: 'team=sandbox',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
};
const GOOD_SECRET = {
  AWS_ACCESS_KEY_ID: b64('AKIAEXAMPLEKEYID0000'),
  AWS_SECRET_ACCESS_KEY: b64('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'),
};
const cm = (change: Record<string, string | null>, base: Record<string, string> = GOOD_CM): ConfigMap => {
  const data: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete data[k];
    else data[k] = v;
  }
  return { metadata: { name: 'peer-pods-cm' }, data };
};
const secret = (data: Record<string, string> | undefined): Secret => ({
  metadata: { name: 'peer-pods-secret' },
  type: 'Opaque',
  ...(data ? { data } : {}),
});
const config =
  (c: ConfigMap, s: Secret = secret(GOOD_SECRET)) =>
  () => {
    const r = validatePeerPodsConfig(c, s);
    return {
      refused: r.problems.length > 0,
      message: [formatProblems(r.problems), ...r.warnings.map((w) => `warning: ${w.message}`)].join('\n'),
    };
  };
/** A valid configuration that still gets a warning (the row passes on the warning, refused or not). */
const warned = (c: ConfigMap) => () => ({ ...config(c)(), refused: true });

// --- kata-remote pods ----------------------------------------------------------------------------------------
const SETTINGS: MutateSettings = { defaultType: 't3.medium', allowedTypes: ['t3.small', 't3.medium', 't3.large'] };
const HARDENED = encodePolicy(hardenedPolicy());
const pod = (annotations: Record<string, string>, spec: Partial<Pod['spec']> = {}): Pod => ({
  metadata: { name: 'p', namespace: 'default', annotations: { [AGENT_POLICY_ANNOTATION]: HARDENED, ...annotations } },
  spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'app' }], ...spec },
});
const admit = (p: Pod) => () => {
  const r = mutatePeerPod(p, SETTINGS);
  return { refused: !r.allowed, message: r.allowed ? r.warnings.join('\n') : r.message };
};

const rows: Row[] = [
  // --- CLI flags and arguments ---
  {
    name: 'an unknown command',
    area: 'CLI',
    run: osc(['instal']),
    expect: [/error: unknown command 'instal'/, /run "osc --help" for usage/],
  },
  {
    name: 'a flag without its value',
    area: 'CLI',
    run: osc(['status', '--kubeconfig']),
    expect: [/^error: option '--kubeconfig <path>' argument missing/],
  },
  {
    name: 'an output format in upper case',
    area: 'CLI',
    run: osc(['status', '-o', 'JSON']),
    expect: [/argument 'JSON' is invalid\. Allowed choices are text, json, yaml\./],
  },
  {
    name: 'a negative worker count',
    area: 'CLI',
    run: osc(['start', '--workers', '-1']),
    expect: [/option '--workers <n>' argument '-1' is invalid\. expected a whole number \(0, 1, 2, \.\.\.\)\./],
  },
  {
    name: 'a worker count in exponent notation',
    area: 'CLI',
    run: osc(['dev', '--workers', '1e3']),
    expect: [/argument '1e3' is invalid\. expected a whole number/],
  },
  {
    name: 'a port above 65535',
    area: 'CLI',
    run: osc(['run', '--metrics-bind-address', ':99999']),
    expect: [/option '--metrics-bind-address <addr>' argument ':99999' is invalid\. expected host:port, :port or a port number\./],
  },
  {
    name: 'a renew deadline as long as the lease',
    area: 'CLI',
    run: osc(['run', '--leader-elect-lease-duration', '60s', '--leader-elect-renew-deadline', '60s']),
    expect: [/--leader-elect-renew-deadline \(60s\) must be shorter than --leader-elect-lease-duration \(60s\)/],
  },
  {
    name: 'a retry period as long as the renew deadline',
    area: 'CLI',
    run: osc(['run', '--leader-elect-retry-period', '107s']),
    expect: [/--leader-elect-retry-period \(107s\) must be shorter than --leader-elect-renew-deadline \(107s\)/],
  },
  {
    name: 'a lease duration that is not a duration',
    area: 'CLI',
    run: osc(['run', '--leader-elect-lease-duration', '137']),
    expect: [
      /option '--leader-elect-lease-duration <duration>' argument '137' is invalid\. expected a duration such as 10m, 30s, 1h or 500ms\./,
    ],
  },
  {
    name: 'an unclosed IPv6 bracket',
    area: 'CLI',
    run: osc(['run', '--health-probe-bind-address', '[::1:80']),
    expect: [/argument '\[::1:80' is invalid\. expected host:port/],
  },
  {
    name: 'a console address that is not one',
    area: 'CLI',
    run: osc(['console', '--address', 'localhost']),
    expect: [/option '--address <addr>' argument 'localhost' is invalid\. expected host:port, :port or a port number\./],
  },
  {
    name: 'a Prometheus URL of another scheme',
    area: 'CLI',
    run: osc(['console', '--prometheus-url', 'ftp://prometheus']),
    expect: [/argument 'ftp:\/\/prometheus' is invalid\. expected an http:\/\/ or https:\/\/ URL\./],
  },
  {
    name: 'an operator namespace that is not a namespace name',
    area: 'CLI',
    run: osc(['run', '--namespace', 'Sandboxed_Containers']),
    expect: [
      /option '--namespace <ns>' argument 'Sandboxed_Containers' is invalid\. expected a namespace name: at most 63 lower case letters, digits or "-"/,
    ],
  },
  {
    name: 'an empty operator image',
    area: 'CLI',
    run: osc(['install', '--dry-run', '--image', '']),
    expect: [/option '--image <image>' argument '' is invalid\. expected an image reference: \[registry\/\]repository\[:tag\]/],
  },
  {
    name: 'an operator image with a space and upper case',
    area: 'CLI',
    run: osc(['install', '--dry-run', '--image', 'Registry.example.com/OSC Operator:dev']),
    expect: [
      /argument 'Registry\.example\.com\/OSC Operator:dev' is invalid\. expected an image reference.*no spaces \(e\.g\. registry\.example\.com\/osc:dev\)/,
    ],
  },
  {
    name: 'an argument no command takes',
    area: 'CLI',
    run: osc(['uninstall', 'now']),
    expect: [/error: too many arguments for 'uninstall'/],
  },
  {
    name: 'a kubeconfig that is a directory',
    area: 'CLI',
    run: osc(['status', '--kubeconfig', A_DIR]),
    expect: [/^error: kubeconfig .*a-directory is a directory: pass the kubeconfig file itself \(check --kubeconfig\)\n$/],
  },
  {
    name: 'an empty kubeconfig',
    area: 'CLI',
    run: osc(['status', '--kubeconfig', EMPTY]),
    expect: [
      /^error: cannot load the kubeconfig .*empty: .*empty \(check --kubeconfig \/ KUBECONFIG: it must be a kubeconfig YAML file\)\n$/,
    ],
  },
  {
    name: 'a kubeconfig that is not YAML',
    area: 'CLI',
    run: osc(['status', '--kubeconfig', NOT_YAML]),
    expect: [
      /^error: cannot load the kubeconfig .*not-yaml: bad indentation .*\(check --kubeconfig \/ KUBECONFIG: it must be a kubeconfig YAML file\)\n$/,
    ],
  },
  {
    name: 'a kubeconfig without clusters',
    area: 'CLI',
    run: osc(['status', '--kubeconfig', NO_CLUSTER]),
    expect: [/^error: the kubeconfig has no current cluster: set a current-context or pass --context\n$/],
  },
  {
    name: 'a kubeconfig server without https://',
    area: 'CLI',
    run: osc(['status', '--kubeconfig', BAD_SERVER]),
    expect: [
      /^error: the kubeconfig's cluster "x" has server "api\.example\.com:6443", which is not an https:\/\/ URL; set it to the API server's address, like https:\/\/api\.example\.com:6443\n$/,
    ],
  },
  {
    name: '--home under /proc (used to hang forever)',
    area: 'CLI',
    run: osc(['dev', '--home', '/proc/osc-home']),
    expect: [/^error: --home \/proc\/osc-home: cannot create directory \/proc\/osc-home: .*; choose a directory you can write to\n$/],
  },
  {
    name: '--home that is a file',
    area: 'CLI',
    run: osc(['start', '--home', A_FILE]),
    expect: [/^error: --home .*a-file: .*a-file exists and is not a directory: choose another directory or remove the file\n$/],
  },
  {
    name: '--dest-dir under /proc (used to hang after collecting)',
    area: 'CLI',
    run: osc(['must-gather', '--dest-dir', '/proc/osc-gather', '--kubeconfig', EMPTY]),
    expect: [
      /^error: --dest-dir \/proc\/osc-gather: cannot create directory \/proc\/osc-gather: .*; choose a directory you can write to\n$/,
    ],
  },
  // --- Kata Agent policies, through osc policy ---
  {
    name: 'policy check with two files',
    area: 'policy',
    run: policy(['check', 'a.rego', 'b.rego']),
    expect: [/^error: "policy check" takes one policy; unexpected "b\.rego" \(quote a value with spaces\)/, /Usage: osc policy/],
  },
  {
    name: 'policy decode with two values',
    area: 'policy',
    run: policy(['decode', 'cGFja2FnZQ==', 'x']),
    expect: [/^error: "policy decode" takes one annotation value; unexpected "x"/],
  },
  {
    name: 'policy default with an argument',
    area: 'policy',
    run: policy(['default', 'hardened']),
    expect: [/^error: unexpected argument "hardened"/],
  },
  {
    name: 'policy check on a directory',
    area: 'policy',
    run: policy(['check', A_DIR]),
    expect: [/^error: cannot read .*a-directory: it is a directory; give the policy file\n$/],
  },
  {
    name: 'policy encode of an empty file',
    area: 'policy',
    run: policy(['encode', EMPTY]),
    expect: [
      /^error: the Kata Agent cannot use this policy, so the pod would never start:\n {2}the policy is empty; it must start with "package agent_policy"\n$/,
    ],
  },
  {
    name: 'policy decode of something that is not base64',
    area: 'policy',
    run: policy(['decode', '%%%']),
    expect: [/^error: the policy annotation is not valid base64; set it to the output of base64 -w0 policy\.rego\n$/],
  },
  {
    name: 'policy check of binary data on standard input',
    area: 'policy',
    run: policy(['check', '-'], '\u0000\u0001\u0002'),
    expect: [/error: the policy has no package line; it must start with "package agent_policy"/],
  },
  {
    name: 'policy annotate with nothing on standard input',
    area: 'policy',
    run: policy(['annotate', '-']),
    expect: [/^error: nothing on standard input\n$/],
  },
  // --- peer-pods-cm ---
  {
    name: 'ConfigMap with no data at all',
    area: 'peer-pods-cm',
    run: config({ metadata: { name: 'peer-pods-cm' } }),
    expect: [/CLOUD_PROVIDER is missing from ConfigMap peer-pods-cm: it is required; set it to "aws"/],
  },
  {
    name: 'VXLAN_PORT with a leading space',
    area: 'peer-pods-cm',
    run: config(cm({ VXLAN_PORT: ' 9000' })),
    expect: [/VXLAN_PORT is " 9000": it has leading or trailing spaces; remove them/],
  },
  {
    name: 'PEERPODS_LIMIT_PER_NODE beyond any number',
    area: 'peer-pods-cm',
    run: config(cm({ PEERPODS_LIMIT_PER_NODE: '99999999999999999999' })),
    expect: [/PEERPODS_LIMIT_PER_NODE is "99999999999999999999": it must be a whole number of pod VMs per node, 1 or more/],
  },
  {
    name: 'AWS_REGION in upper case',
    area: 'peer-pods-cm',
    run: config(cm({ AWS_REGION: 'US-EAST-2' })),
    expect: [/AWS_REGION is "US-EAST-2": it is not an AWS region name \(like us-east-1\); set it to the cluster's region/],
  },
  {
    name: 'more than 49 TAGS',
    area: 'peer-pods-cm',
    run: config(cm({ TAGS: Array.from({ length: 60 }, (_, i) => `k${i}=v`).join(',') })),
    expect: [/TAGS has 60 tags: AWS allows at most 48 besides Name and caa-cluster-uid; remove some/],
  },
  {
    name: 'a TAGS key longer than AWS allows',
    area: 'peer-pods-cm',
    run: config(cm({ TAGS: `${'k'.repeat(200)}=v` })),
    expect: [/TAGS is "k+\.\.\.": the key "k+\.\.\." is longer than 128 characters/],
  },
  {
    name: 'a TAGS value longer than AWS allows',
    area: 'peer-pods-cm',
    run: config(cm({ TAGS: `k=${'v'.repeat(300)}` })),
    expect: [/the value of k is longer than 256 characters/],
  },
  {
    name: 'a TAGS key in the aws: namespace',
    area: 'peer-pods-cm',
    run: config(cm({ TAGS: 'aws:owner=me' })),
    expect: [/the key "aws:owner" starts with aws:, which AWS reserves/],
  },
  {
    name: 'PROXY_TIMEOUT of zero',
    area: 'peer-pods-cm',
    run: config(cm({ PROXY_TIMEOUT: '0s' })),
    expect: [/PROXY_TIMEOUT is "0s": it must be longer than zero; set it to 5m as documented/],
  },
  {
    name: 'PODVM_AMI_ID in upper-case hex',
    area: 'peer-pods-cm',
    run: config(cm({ PODVM_AMI_ID: 'ami-0123456789ABCDEF0' })),
    expect: [/PODVM_AMI_ID is "ami-0123456789ABCDEF0": it is not an AMI ID \(ami- followed by 8 or 17 hex digits\)/],
  },
  {
    name: 'a security group listed twice',
    area: 'peer-pods-cm',
    run: config(cm({ AWS_SG_IDS: 'sg-0123456789abcdef0,sg-0123456789abcdef0' })),
    expect: [/security group "sg-0123456789abcdef0" is listed twice; list each once/],
  },
  {
    name: 'a subnet ID too short',
    area: 'peer-pods-cm',
    run: config(cm({ AWS_SUBNET_ID: 'subnet-123' })),
    expect: [
      /AWS_SUBNET_ID is "subnet-123": it is not a subnet ID \(subnet- followed by 8 or 17 hex digits\); set it to a worker's subnet ID/,
    ],
  },
  {
    name: 'a key in lower case (ignored, with a warning)',
    area: 'peer-pods-cm',
    run: warned(cm({ cloud_provider: 'aws' })),
    expect: [/warning: cloud_provider is not a peer pods setting and is ignored; did you mean CLOUD_PROVIDER\?/],
  },
  {
    name: 'a default instance type outside the list (a warning)',
    area: 'peer-pods-cm',
    run: warned(cm({ PODVM_INSTANCE_TYPE: 'm5.xlarge' })),
    expect: [/warning: PODVM_INSTANCE_TYPE m5\.xlarge is not in PODVM_INSTANCE_TYPES \(t3\.small,t3\.medium,t3\.large\)/],
  },
  // --- peer-pods-secret ---
  {
    name: 'a Secret with no data',
    area: 'peer-pods-secret',
    run: config(cm({}), secret(undefined)),
    expect: [/AWS_ACCESS_KEY_ID is missing in Secret peer-pods-secret: it is required for aws/, /AWS_SECRET_ACCESS_KEY is missing/],
  },
  {
    name: 'a Secret with its keys in lower case',
    area: 'peer-pods-secret',
    run: config(
      cm({}),
      secret({ aws_access_key_id: GOOD_SECRET.AWS_ACCESS_KEY_ID, aws_secret_access_key: GOOD_SECRET.AWS_SECRET_ACCESS_KEY }),
    ),
    expect: [/AWS_ACCESS_KEY_ID is missing in Secret peer-pods-secret: it is required for aws; set it to the AWS access key ID/],
  },
  {
    name: 'a Secret value with a Windows line ending',
    area: 'peer-pods-secret',
    run: config(cm({}), secret({ ...GOOD_SECRET, AWS_SECRET_ACCESS_KEY: b64('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\r\n') })),
    expect: [/AWS_SECRET_ACCESS_KEY in Secret peer-pods-secret ends with a line break \(was it encoded with echo instead of echo -n\?\)/],
  },
  // --- kata-remote pod annotations ---
  {
    name: 'default_vcpus beyond any number',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_VCPUS_ANNOTATION]: '99999999999999999999' })),
    expect: [
      /^annotation io\.katacontainers\.config\.hypervisor\.default_vcpus is "99999999999999999999": it is too large; write a whole number of vCPUs, like "2"$/,
    ],
  },
  {
    name: 'default_memory beyond any number',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_MEMORY_ANNOTATION]: '99999999999999999999999' })),
    expect: [
      /^annotation io\.katacontainers\.config\.hypervisor\.default_memory is "99999999999999999999999": it is too large; write a whole number of MiB, like "2048"$/,
    ],
  },
  {
    name: 'default_memory as a huge quantity',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_MEMORY_ANNOTATION]: '999999Ei' })),
    expect: [
      /^annotation io\.katacontainers\.config\.hypervisor\.default_memory is "999999Ei": it must be a whole number of MiB, 1 or more \(like "2048"\)$/,
    ],
  },
  {
    name: 'default_vcpus negative',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_VCPUS_ANNOTATION]: '-1' })),
    expect: [/default_vcpus is "-1": it must be a whole number of vCPUs, 1 or more \(like "2"\)/],
  },
  {
    name: 'default_vcpus with a space',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_VCPUS_ANNOTATION]: ' 2' })),
    expect: [/default_vcpus is " 2": it must be a whole number of vCPUs/],
  },
  {
    name: 'default_memory in hexadecimal',
    area: 'pod annotations',
    run: admit(pod({ [DEFAULT_MEMORY_ANNOTATION]: '0x800' })),
    expect: [/default_memory is "0x800": it must be a whole number of MiB, 1 or more \(like "2048"\)/],
  },
  {
    name: 'machine_type in upper case',
    area: 'pod annotations',
    run: admit(pod({ [MACHINE_TYPE_ANNOTATION]: 'T3.MEDIUM' })),
    expect: [
      /instance type "T3\.MEDIUM" \(annotation io\.katacontainers\.config\.hypervisor\.machine_type\) is not allowed: the allowed types are t3\.small, t3\.medium, t3\.large; use one of them/,
    ],
  },
  {
    name: 'a policy annotation that is base64 of nothing usable',
    area: 'pod annotations',
    run: admit(pod({ [AGENT_POLICY_ANNOTATION]: b64('default ExecProcessRequest := false\n') })),
    expect: [
      /annotation io\.katacontainers\.config\.agent\.policy: the Kata Agent cannot use this policy, so the pod would never start: the policy has no package line/,
    ],
  },
  // --- kata-remote pod resources ---
  {
    name: 'a CPU limit no machine has',
    area: 'pod resources',
    run: admit(pod({}, { containers: [{ name: 'app', resources: { limits: { cpu: '1e30' } } }] })),
    expect: [
      /^the pod's CPU \(the sum of its containers' CPU limits, or requests\) is too large for any pod VM; lower the containers' resources\.limits\.cpu$/,
    ],
  },
  {
    name: 'a memory limit no machine has',
    area: 'pod resources',
    run: admit(pod({}, { containers: [{ name: 'app', resources: { limits: { memory: '999999999Ei' } } }] })),
    expect: [/^the pod's memory .* is too large for any pod VM; lower the containers' resources\.limits\.memory$/],
  },
  {
    name: 'a pod-level CPU limit that is not a quantity',
    area: 'pod resources',
    run: admit(pod({}, { resources: { limits: { cpu: 'lots' } } } as Partial<Pod['spec']>)),
    expect: [
      /the pod resources\.limits\.cpu is invalid: "lots" is not a quantity \(expected a number with an optional unit, like 500m, 2, 1Gi\)/,
    ],
  },
];

describe('bad input without a cluster: each gets a message naming what is wrong and the fix', () => {
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`the table covers every area (${rows.length} rows)`, () => {
    const areas = new Set(rows.map((r) => r.area));
    for (const a of ['CLI', 'peer-pods-cm', 'peer-pods-secret', 'pod annotations', 'pod resources', 'policy'] as const)
      assert.ok(areas.has(a), a);
    assert.equal(new Set(rows.map((r) => r.name)).size, rows.length, 'row names are unique');
  });

  for (const row of rows) {
    test(`[${row.area}] ${row.name}`, async () => {
      const r = await row.run();
      assert.equal(r.refused, true, `accepted: ${r.message}`);
      for (const m of row.expect) assert.match(r.message, m);
    });
  }
});
