import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { parseAddress, parseNonNegativeInt, parseUrl } from '../../src/cli/common.ts';
import { freePort, kubeconfigText } from '../../src/devcluster/controlplane.ts';
import { REDACTED, redactSecret } from '../../src/mustgather/collect.ts';
import { runOsc as run } from '../support/cli.ts';

const COMMANDS = ['start', 'dev', 'run', 'install', 'uninstall', 'status', 'must-gather'];
const CLUSTER_COMMANDS: string[][] = [['run'], ['install'], ['uninstall'], ['status'], ['status', '--watch'], ['must-gather']];

describe('osc command line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'osc-cli-unit-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('osc policy: generates a hardened policy, checks it, encodes it; usage errors exit 2', async () => {
    const hardened = await run(['policy', 'hardened', '--no-exec']);
    assert.equal(hardened.code, 0, hardened.stderr);
    assert.match(hardened.stdout, /^package agent_policy$/m);
    assert.match(hardened.stdout, /^default ExecProcessRequest := false$/m);
    const file = join(dir, 'policy.rego');
    writeFileSync(file, hardened.stdout);
    const check = await run(['policy', 'check', file]);
    assert.equal(check.code, 0, check.stderr);
    const encoded = await run(['policy', 'encode', file]);
    assert.equal(Buffer.from(encoded.stdout.trim(), 'base64').toString('utf8'), hardened.stdout);
    writeFileSync(join(dir, 'bad.rego'), 'package wrong\ndefault ExecProcessRequest := maybe\n');
    const bad = await run(['policy', 'check', join(dir, 'bad.rego')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stdout + bad.stderr, /agent_policy/);
    assert.equal((await run(['policy', 'frobnicate'])).code, 2);
  });

  test("osc run's lease flags default to OpenShift's timings", async () => {
    const help = (await run(['run', '--help'])).stdout.replace(/\s+/g, ' ');
    for (const [flag, value] of [
      ['--leader-elect-lease-duration', '137s'],
      ['--leader-elect-renew-deadline', '107s'],
      ['--leader-elect-retry-period', '26s'],
    ])
      assert.match(help, new RegExp(`${flag} <duration> (?:(?! --).)*\\(default: ${value}\\)`), `${flag} defaults to ${value}`);
  });

  test('--help for the program and every command, with examples', async () => {
    const top = await run(['--help']);
    assert.equal(top.code, 0);
    for (const c of COMMANDS) assert.match(top.stdout, new RegExp(`^  ${c} `, 'm'), `${c} listed`);
    for (const c of COMMANDS) {
      const r = await run([c, '--help']);
      assert.equal(r.code, 0, `${c} --help`);
      assert.match(r.stdout, new RegExp(`^Usage: osc ${c} \\[options\\]`), c);
      assert.match(r.stdout, /\nExamples:\n {2}\$ /, `${c} has examples`);
    }
  });

  test('as a kubectl plugin the usage says "kubectl kata"', async () => {
    const r = await run(['status', '--help'], 'kubectl kata');
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: kubectl kata status \[options\]/);
  });

  test('--version', async () => {
    const r = await run(['--version']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^\d+\.\d+\.\d+\n$/);
  });

  test('bad flags: commander says what is wrong, exit code non-zero', async () => {
    const cases: [string[], RegExp][] = [
      [['bogus'], /error: unknown command 'bogus'/],
      [['status', '--bogus'], /error: unknown option '--bogus'/],
      [['status', '-o', 'xml'], /error: option '-o, --output <format>' argument 'xml' is invalid\. Allowed choices are text, json, yaml\./],
      [['start', '--workers', 'two'], /error: option '--workers <n>' argument 'two' is invalid\. expected a whole number/],
      [['dev', '--masters', '0'], /error: option '--masters <n>' argument '0' is invalid\. expected a number greater than 0/],
      [['dev', '--reboot-ms', '-5'], /argument '-5' is invalid/],
      [['dev', '--cloud', 'OpenStack'], /Allowed choices are None, BareMetal, AWS, Azure, GCP/],
      [['dev', '--platform', 'OpenStack'], /Allowed choices are None, BareMetal, AWS, Azure, GCP/],
      [['run', '--metrics-bind-address', 'nowhere'], /argument 'nowhere' is invalid\. expected host:port/],
      [['run', '--webhook-url', 'http://127.0.0.1:1'], /expected an https:\/\/ URL/],
      [['run', '--log-level', 'loud'], /Allowed choices are trace, debug, info, warn, error, fatal, silent/],
      [['status', 'extra'], /error: too many arguments for 'status'/],
      [['install', '--output-dir', dir], /error: --output-dir writes the manifests instead of installing them: add --dry-run/],
      [['start', '--compact', '--workers', '2'], /error: --compact clusters have no worker nodes/],
      [
        ['start', '--eligible', 'worker-0,wroker-1'],
        /^error: --eligible names a node this dev cluster does not have: wroker-1 \(its nodes: master-0, worker-0, worker-1\)\n$/,
      ],
      [
        ['dev', '--workers', '3', '--eligible', 'worker-3,node-a'],
        /^error: --eligible names nodes this dev cluster does not have: worker-3, node-a /,
      ],
      [['dev', '--compact', '--eligible', 'worker-0'], /its nodes: master-0, master-1, master-2\)/],
      [['dev', '--eligible', ','], /^error: --eligible is empty/],
      [['dev', '--distribution', 'k3s'], /Allowed choices are openshift, kubernetes/],
      [
        ['dev', '--distribution', 'kubernetes', '--eligible', 'worker-0'],
        /^error: --eligible needs Node Feature Discovery, which the kubernetes distribution does not have/,
      ],
      [['start', '--distribution', 'kubernetes', '--cloud', 'AWS'], /^error: --cloud sets the OpenShift Infrastructure/],
      // The deprecated spelling of --cloud still works, with a warning.
      [
        ['start', '--distribution', 'kubernetes', '--platform', 'AWS'],
        /^warning: --platform is deprecated: use --cloud \(.*\)\nerror: --cloud sets the OpenShift Infrastructure/,
      ],
      [['dev', '--platform', 'AWS', '--cloud', 'BareMetal'], /error: --platform AWS and --cloud BareMetal disagree: drop --platform/],
    ];
    for (const [args, expected] of cases) {
      const r = await run(args);
      assert.notEqual(r.code, 0, `${args.join(' ')} exits non-zero`);
      assert.match(r.stderr, expected, `${args.join(' ')}: ${r.stderr}`);
    }
  });

  test('--output-dir: a file in the way or a directory that cannot be made is a clear error, not EEXIST or a hang', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const onFile = await run(['install', '--dry-run', '--output-dir', file]);
    assert.equal(onFile.code, 1);
    assert.equal(
      onFile.stderr,
      `error: --output-dir ${file}: ${file} exists and is not a directory: choose another directory or remove the file\n`,
    );
    const below = await run(['install', '--dry-run', '--output-dir', join(file, 'sub')]);
    assert.equal(below.code, 1);
    assert.match(below.stderr, /^error: --output-dir .*a-file\/sub: .*a part of the path is a file, not a directory\n$/);
    // mkdir under /proc answers ENOENT for a parent that exists: Node's recursive mkdir spun there forever.
    const proc = await run(['install', '--dry-run', '--output-dir', '/proc/osc-config']);
    assert.equal(proc.code, 1);
    assert.match(
      proc.stderr,
      /^error: --output-dir \/proc\/osc-config: cannot create directory \/proc\/osc-config: .*; choose a directory you can write to\n$/,
    );
    const fresh = await run(['install', '--dry-run', '--output-dir', join(dir, 'new', 'config')]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.match(fresh.stdout, /wrote .*new\/config\/10-crds\.yaml/);
  });

  test('no kubeconfig anywhere: says so, instead of talking about localhost:8080', async () => {
    const saved = { HOME: process.env.HOME, KUBECONFIG: process.env.KUBECONFIG, KSH: process.env.KUBERNETES_SERVICE_HOST };
    process.env.HOME = join(dir, 'empty-home');
    delete process.env.KUBECONFIG;
    delete process.env.KUBERNETES_SERVICE_HOST;
    try {
      for (const args of CLUSTER_COMMANDS) {
        const r = await run(args);
        assert.equal(r.code, 1, args.join(' '));
        assert.match(r.stderr, /^error: no kubeconfig found: KUBECONFIG is not set, .*empty-home\/\.kube\/config does not exist/, r.stderr);
        assert.doesNotMatch(r.stderr, /8080/);
      }
    } finally {
      for (const [k, v] of Object.entries({ HOME: saved.HOME, KUBECONFIG: saved.KUBECONFIG, KUBERNETES_SERVICE_HOST: saved.KSH })) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test('osc start and osc dev reboot nodes for the same default time', async () => {
    const start = await run(['start', '--help']);
    const dev = await run(['dev', '--help']);
    const def = (help: string) => /--reboot-ms <ms>[\s\S]*?\(default: (\d+)\)/.exec(help)?.[1];
    assert.equal(def(start.stdout), '4000');
    assert.equal(def(dev.stdout), def(start.stdout));
  });

  test('a kubeconfig that does not exist is named', async () => {
    for (const args of CLUSTER_COMMANDS) {
      const r = await run([...args, '--kubeconfig', join(dir, 'missing')]);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /^error: kubeconfig file .*missing does not exist \(check --kubeconfig\)\n$/);
    }
  });

  test('an unreachable cluster: every command says so, with the address and what to check', async () => {
    const port = await freePort(); // nothing listens there
    const kubeconfig = join(dir, 'unreachable');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: c',
        '  cluster:',
        `    server: https://127.0.0.1:${port}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: u',
        '  user:',
        '    token: not-a-real-token',
        'contexts:',
        '- name: c',
        '  context: {cluster: c, user: u}',
        'current-context: c',
        '',
      ].join('\n'),
    );
    for (const args of CLUSTER_COMMANDS) {
      const r = await run([...args, '--kubeconfig', kubeconfig]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(
        r.stderr,
        `error: cannot reach the Kubernetes API at https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port} (check --kubeconfig / KUBECONFIG)\n`,
        args.join(' '),
      );
    }
  });

  test('unusable TLS material in the kubeconfig is called that, not "unreachable"', async () => {
    const kubeconfig = join(dir, 'bad-pem');
    const port = await freePort();
    writeFileSync(kubeconfig, kubeconfigText(`https://127.0.0.1:${port}`, 'not a certificate', 'cert', 'key'));
    const r = await run(['status', '--kubeconfig', kubeconfig]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`^error: the kubeconfig's certificate or key for https://127\\.0\\.0\\.1:${port} is unusable: .*PEM`),
    );
  });

  test('an unknown --context is named', async () => {
    const kubeconfig = join(dir, 'ctx');
    writeFileSync(kubeconfig, kubeconfigText('https://127.0.0.1:1', 'ca', 'cert', 'key'));
    const r = await run(['status', '--kubeconfig', kubeconfig, '--context', 'nope']);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'error: context "nope" not found in the kubeconfig\n');
  });

  test('option parsers', () => {
    assert.equal(parseNonNegativeInt('3'), 3);
    assert.throws(() => parseNonNegativeInt('3.5'));
    assert.equal(parseAddress(':8080'), ':8080');
    assert.equal(parseAddress('8080'), ':8080');
    assert.equal(parseAddress('127.0.0.1:0'), '127.0.0.1:0');
    assert.equal(parseAddress('0'), '0');
    assert.throws(() => parseAddress('host:99999'));
    assert.equal(parseUrl('https://127.0.0.1:{port}'), 'https://127.0.0.1:{port}');
  });

  test('must-gather redaction keeps keys, drops every value and the last-applied copy', () => {
    const s = redactSecret({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'peer-pods-secret',
        namespace: 'x',
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"data":{"AWS_SECRET_ACCESS_KEY":"c2VjcmV0"}}', keep: 'me' },
      },
      data: { AWS_ACCESS_KEY_ID: 'a2V5', AWS_SECRET_ACCESS_KEY: 'c2VjcmV0' },
      stringData: { token: 'plain' },
    });
    assert.deepEqual(s.data, { AWS_ACCESS_KEY_ID: REDACTED, AWS_SECRET_ACCESS_KEY: REDACTED });
    assert.deepEqual(s.stringData, { token: REDACTED });
    assert.deepEqual(s.metadata.annotations, { keep: 'me' });
    assert.ok(!JSON.stringify(s).includes('c2VjcmV0') && !JSON.stringify(s).includes('plain'));
  });
});
