/**
 * Initdata: every malformed value at each layer gets its own message, the documentation's example round
 * trips, the reference values are those an attestation service computes, and the places an administrator
 * writes initdata (peer-pods-cm's INITDATA, the pod annotation) refuse a malformed value.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { INITDATA_ANNOTATION, MAX_INITDATA_ENCODED_BYTES } from '../../src/api/initdata.ts';
import { INITDATA_USAGE, runInitdataCommand } from '../../src/cli/commands/initdata.ts';
import type { Pod } from '../../src/kube/resources.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import {
  buildInitdata,
  decodeInitdata,
  decodeInitdataText,
  encodeInitdata,
  InitdataError,
  initdataReferenceValues,
} from '../../src/peerpods/initdata.ts';
import { mutatePeerPod } from '../../src/peerpods/mutate.ts';
import { AGENT_POLICY_ANNOTATION, defaultPolicy, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';
import { runOsc } from '../support/cli.ts';
import { awsPeerPodsCm, awsPeerPodsSecret } from '../support/peerpods-fixtures.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/initdata/${name}`, import.meta.url), 'utf8');
/** The product documentation's example layout, with its placeholders filled in (test/fixtures/initdata/). */
const EXAMPLE = fixture('initdata.toml');
const AA = fixture('aa.toml');
const CDH = fixture('cdh.toml');
const POLICY = fixture('policy.rego');

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const doc = (head: string, data: string) => `${head}\n\n[data]\n${data}`;
const HEAD = 'version = "0.1.0"\nalgorithm = "sha384"';
const AA_ENTRY = `"aa.toml" = '''\n${AA}'''\n`;

// A document whose compressed form is over the limit: random text does not compress.
const RANDOM = randomBytes(16 * 1024).toString('base64');
const TOO_LARGE = encodeInitdata(doc(HEAD, `${AA_ENTRY}"extra" = "${RANDOM}"\n`));

const BAD: { name: string; value: string; layer: string; message: RegExp }[] = [
  { name: 'empty', value: '', layer: 'value', message: /^the initdata is empty: remove the setting, or set it to/ },
  { name: 'only spaces', value: '  \n', layer: 'value', message: /^the initdata is empty/ },
  {
    name: 'over the size limit',
    value: TOO_LARGE,
    layer: 'size',
    message: /over the 16384-byte limit \(the pod VM's user data on AWS holds at most 16 KB\)/,
  },
  {
    name: 'plain TOML',
    value: EXAMPLE,
    layer: 'base64',
    message: /is plain TOML, not gzipped and base64-encoded: encode the TOML file with gzip -c initdata.toml \| base64 -w0/,
  },
  {
    name: 'plain TOML starting with [data]',
    value: '[data]\n"aa.toml" = ""\n',
    layer: 'base64',
    message: /is plain TOML, not gzipped and base64-encoded/,
  },
  { name: 'not base64', value: 'not*base64!', layer: 'base64', message: /^the initdata is not base64 \(characters outside/ },
  { name: 'base64 with a bad length', value: 'H4sIAAAAAAAAA', layer: 'base64', message: /^the initdata is not base64/ },
  {
    name: 'wrapped base64',
    value: `${encodeInitdata(EXAMPLE).slice(0, 76)}\n${encodeInitdata(EXAMPLE).slice(76)}`,
    layer: 'base64',
    message: /line breaks or spaces in its base64.*base64 -w0/,
  },
  {
    name: 'base64 of TOML, not gzipped',
    value: b64(EXAMPLE),
    layer: 'gzip',
    message: /^the initdata is base64 of text, not of gzip: gzip it before encoding/,
  },
  {
    name: 'base64 of something else',
    value: b64('hello world!'),
    layer: 'gzip',
    message: /^the initdata's base64 does not decode to gzip data/,
  },
  {
    name: 'damaged gzip',
    value: b64(gzipSync(EXAMPLE).subarray(0, 40)),
    layer: 'gzip',
    message: /^the initdata's gzip data is damaged \(/,
  },
  {
    name: 'gzip that inflates without end',
    value: b64(gzipSync(Buffer.alloc(2 * 1024 * 1024))),
    layer: 'gzip',
    message: /decompresses to more than 1048576 bytes/,
  },
  {
    name: 'not UTF-8',
    value: b64(gzipSync(Buffer.from([0x76, 0xff, 0xfe, 0x0a]))),
    layer: 'utf-8',
    message: /^the initdata document is not UTF-8 text/,
  },
  {
    name: 'not TOML',
    value: encodeInitdata('version = \n'),
    layer: 'toml',
    message: /^the initdata document is not valid TOML \(line 1, column \d+: .+\): fix initdata.toml/,
  },
  {
    name: 'missing version',
    value: encodeInitdata(doc('algorithm = "sha384"', AA_ENTRY)),
    layer: 'version',
    message: /^the initdata document has no version: add version = "0.1.0"$/,
  },
  {
    name: 'version not a string',
    value: encodeInitdata(doc('version = 1\nalgorithm = "sha384"', AA_ENTRY)),
    layer: 'version',
    message: /version is not a string: write version = "0.1.0"/,
  },
  {
    name: 'unknown version',
    value: encodeInitdata(doc('version = "0.2.0"\nalgorithm = "sha384"', AA_ENTRY)),
    layer: 'version',
    message: /^the initdata version is "0.2.0": the guest accepts only "0.1.0"/,
  },
  {
    name: 'missing algorithm',
    value: encodeInitdata(doc('version = "0.1.0"', AA_ENTRY)),
    layer: 'algorithm',
    message: /has no algorithm: add algorithm = "sha384"/,
  },
  {
    name: 'unknown algorithm',
    value: encodeInitdata(doc('version = "0.1.0"\nalgorithm = "md5"', AA_ENTRY)),
    layer: 'algorithm',
    message: /"md5": it is not a supported hash algorithm; set it to one of sha256, sha384, sha512/,
  },
  {
    name: 'algorithm in upper case',
    value: encodeInitdata(doc('version = "0.1.0"\nalgorithm = "SHA-384"', AA_ENTRY)),
    layer: 'algorithm',
    message: /write it in lower case, algorithm = "sha384"/,
  },
  {
    name: 'no [data]',
    value: encodeInitdata(`${HEAD}\n`),
    layer: 'shape',
    message: /has no \[data\] section: add a \[data\] section holding/,
  },
  {
    name: '[data] not a table',
    value: encodeInitdata(`data = "aa.toml"\n${HEAD}\n`),
    layer: 'shape',
    message: /^\[data\] in the initdata document is not a table/,
  },
  {
    name: 'data entry not a string',
    value: encodeInitdata(doc(HEAD, '"aa.toml" = 42\n')),
    layer: 'data',
    message: /^\[data\] entry "aa.toml" is not a string: write the whole document as one string/,
  },
  {
    name: 'data entry a table',
    value: encodeInitdata(doc(HEAD, '[data."cdh.toml"]\nsocket = "x"\n')),
    layer: 'data',
    message: /^\[data\] entry "cdh.toml" is not a string/,
  },
  {
    name: 'no document the guest reads',
    value: encodeInitdata(doc(HEAD, '"aa.tml" = "x = 1"\n')),
    layer: 'data',
    message: /^\[data\] has none of aa.toml, cdh.toml, policy.rego/,
  },
  {
    name: 'aa.toml not TOML',
    value: encodeInitdata(doc(HEAD, `"aa.toml" = '''\n[token_configs\nurl = 'x'\n'''\n`)),
    layer: 'aa.toml',
    message: /^\[data\] "aa.toml" is not valid TOML \(line 1, column \d+ of aa.toml: .+\): fix aa.toml$/,
  },
  {
    name: 'cdh.toml not TOML',
    value: encodeInitdata(doc(HEAD, `${AA_ENTRY}"cdh.toml" = '''\nsocket = unix:///run/cdh.sock\n'''\n`)),
    layer: 'cdh.toml',
    message: /^\[data\] "cdh.toml" is not valid TOML \(line 1, column \d+ of cdh.toml/,
  },
  {
    name: 'policy.rego refused',
    value: encodeInitdata(doc(HEAD, `"policy.rego" = '''\ndefault ExecProcessRequest := false\n'''\n`)),
    layer: 'policy.rego',
    message: /^\[data\] "policy.rego" is refused by osc policy check: .*package.*; fix the policy \(start from osc policy hardened\)$/,
  },
];

describe('initdata: bad values, one message per layer', () => {
  test('the oversized row is over the limit', () => assert.ok(TOO_LARGE.length > MAX_INITDATA_ENCODED_BYTES));
  for (const row of BAD) {
    test(row.name, () => {
      assert.throws(
        () => decodeInitdata(row.value),
        (e: unknown) => {
          assert.ok(e instanceof InitdataError, String(e));
          assert.match(e.message, row.message);
          assert.equal(e.layer, row.layer);
          return true;
        },
      );
    });
  }
});

describe('initdata: the documentation example', () => {
  test('encodes, decodes to the same bytes, and checks', () => {
    const value = encodeInitdata(EXAMPLE);
    assert.equal(decodeInitdataText(value), EXAMPLE);
    const initdata = decodeInitdata(value);
    assert.equal(initdata.version, '0.1.0');
    assert.equal(initdata.algorithm, 'sha384');
    assert.deepEqual(initdata.data, { 'aa.toml': AA, 'cdh.toml': CDH, 'policy.rego': POLICY });
    assert.deepEqual(initdata.warnings, []);
    // Same text, same value: gzip writes no time stamp.
    assert.equal(encodeInitdata(EXAMPLE), value);
  });

  test('build from the three files gives the example document', () => {
    const built = buildInitdata({ algorithm: 'sha384', documents: { 'aa.toml': AA, 'cdh.toml': CDH, 'policy.rego': POLICY } });
    assert.equal(built.toml, EXAMPLE);
    assert.equal(decodeInitdataText(built.value), EXAMPLE);
  });

  test('a document that cannot be a literal string is quoted, and still round trips', () => {
    const odd = "x = '''a'''\n";
    const built = buildInitdata({ algorithm: 'sha256', documents: { 'aa.toml': odd } });
    assert.equal(decodeInitdata(built.value).data['aa.toml'], odd);
  });

  test('reference values: the digest of the document bytes, fitted to each TEE (values from sha384sum and sha256sum)', () => {
    const r = initdataReferenceValues(decodeInitdata(encodeInitdata(EXAMPLE)));
    const sha384 = '4a04dc3a0fd524debe93e34dd619d30492a620e4a9c27c7db66e694a5388dd1e5e61345c50fa558b61e0a0aafd925d69';
    assert.equal(r.digest, sha384);
    assert.equal(r.tdxMrConfigId, sha384);
    assert.equal(r.snpHostData, sha384.slice(0, 64));
    // sha256sum initdata.toml, extended into a zero PCR: sha256(32 zero bytes || sha256(document)).
    assert.equal(r.vtpmPcr8, '8a081a86451b53d86c6ef6419c647cfb88bb25a4a113ecfcb6a1c21f15bdbc1f');
    // sha256 is zero-padded to TDX's 48 bytes; sha512 is cut to it.
    const r256 = initdataReferenceValues({ toml: 'x', algorithm: 'sha256' });
    assert.equal(r256.tdxMrConfigId, `${r256.digest}${'00'.repeat(16)}`);
    assert.equal(r256.snpHostData, r256.digest);
    const r512 = initdataReferenceValues({ toml: 'x', algorithm: 'sha512' });
    assert.equal(r512.tdxMrConfigId, r512.digest.slice(0, 96));
  });
});

describe('osc initdata (runInitdataCommand)', () => {
  const files: Record<string, string> = { 'aa.toml': AA, 'cdh.toml': CDH, 'policy.rego': POLICY, 'bad.toml': '[kbc\n' };
  const io = {
    readFile: (p: string) => {
      const t = files[p];
      if (t === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
      return t;
    },
  };
  const run = (...args: string[]) => runInitdataCommand(args, io);
  const VALUE = encodeInitdata(EXAMPLE);

  test('build prints the encoded example; --toml the document; presets are osc policy policies', () => {
    assert.deepEqual(run('build', '--aa', 'aa.toml', '--cdh', 'cdh.toml', '--policy', 'policy.rego'), {
      stdout: `${VALUE}\n`,
      stderr: '',
      code: 0,
    });
    assert.equal(run('build', '--aa', 'aa.toml', '--cdh', 'cdh.toml', '--policy', 'policy.rego', '--toml').stdout, EXAMPLE);
    const permissive = run('build', '--policy-preset', 'default', '--algorithm', 'sha512');
    assert.equal(permissive.code, 0);
    const built = decodeInitdata(permissive.stdout.trim());
    assert.equal(built.algorithm, 'sha512');
    assert.equal(built.data['policy.rego'], defaultPolicy());
    assert.match(permissive.stderr, /^warning: the default policy allows oc exec/);
    assert.equal(decodeInitdata(run('build', '--policy-preset', 'hardened').stdout.trim()).data['policy.rego'], hardenedPolicy());
  });

  test('build refuses bad usage (2) and bad documents (1), naming them', () => {
    assert.equal(run('build').code, 2);
    assert.match(run('build').stderr, /give at least one of --aa, --cdh, --policy or --policy-preset/);
    assert.match(run('build', '--aa').stderr, /--aa needs a value/);
    assert.match(run('build', '--aa', 'aa.toml', '--algorithm', 'md5').stderr, /--algorithm is "md5": use one of sha256, sha384, sha512/);
    assert.match(run('build', '--policy', 'policy.rego', '--policy-preset', 'hardened').stderr, /exclude each other/);
    assert.match(run('build', '--policy-preset', 'strict').stderr, /--policy-preset is "strict"/);
    assert.match(run('build', '--aa', 'aa.toml', '--bogus', 'x').stderr, /unknown option --bogus/);
    assert.deepEqual(run('build', '--aa', 'missing.toml'), {
      stdout: '',
      stderr: 'error: cannot read missing.toml (--aa): no such file\n',
      code: 1,
    });
    const bad = run('build', '--cdh', 'bad.toml');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: \[data\] "cdh.toml" is not valid TOML/);
  });

  test('decode prints the document; reads standard input without its last line break', () => {
    assert.deepEqual(run('decode', VALUE), { stdout: EXAMPLE, stderr: '', code: 0 });
    assert.equal(runInitdataCommand(['decode', '-'], { stdin: `${VALUE}\n` }).stdout, EXAMPLE);
    assert.deepEqual(runInitdataCommand(['decode', '-'], {}), { stdout: '', stderr: 'error: nothing on standard input\n', code: 1 });
  });

  test('check: OK for the example, exit 1 with the message for every bad row', () => {
    assert.deepEqual(run('check', VALUE), {
      stdout: 'initdata OK: version 0.1.0, sha384, aa.toml, cdh.toml, policy.rego\n',
      stderr: '',
      code: 0,
    });
    for (const row of BAD) {
      const r = runInitdataCommand(['check', '-'], { stdin: row.value });
      assert.equal(r.code, 1, row.name);
      assert.match(r.stderr.replace(/^error: /, '').trimEnd(), row.message, row.name);
    }
    const unused = run('check', encodeInitdata(doc(HEAD, `${AA_ENTRY}"extra.txt" = "x"\n`)));
    assert.equal(unused.code, 0);
    assert.match(unused.stderr, /^warning: \[data\] entry "extra.txt" is not read by the guest/);
  });

  test('digest names each TEE format', () => {
    const r = run('digest', VALUE);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^sha384 of the initdata document .*:\n {2}4a04dc3a/);
    assert.match(r.stdout, /Intel TDX, MRCONFIGID \(48 bytes.*\n {2}4a04dc3a[0-9a-f]{88}\n/);
    assert.match(r.stdout, /AMD SEV-SNP, HOST_DATA \(32 bytes.*\n {2}4a04dc3a[0-9a-f]{56}\n/);
    assert.match(r.stdout, /PCR 8 .*\n {2}8a081a86/);
    assert.equal(run('digest', 'x').code, 1);
  });

  test('the osc program runs it: help, a check that fails with exit status 1', async () => {
    assert.deepEqual(await runOsc(['initdata', '--help']), { code: 0, stdout: INITDATA_USAGE, stderr: '' });
    const bad = await runOsc(['initdata', 'check', 'not*base64']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: the initdata is not base64/);
    const help = await runOsc(['--help']);
    assert.match(help.stdout, /initdata .*build, decode, check and digest/);
  });

  test('usage: help, unknown commands and extra arguments', () => {
    assert.deepEqual(run(), { stdout: INITDATA_USAGE, stderr: '', code: 0 });
    assert.equal(run('check', '--help').stdout, INITDATA_USAGE);
    assert.match(INITDATA_USAGE, /Examples:\n {2}\$ osc initdata build/);
    assert.equal(run('encode').code, 2);
    assert.equal(run('check').code, 2);
    assert.match(run('check', VALUE, VALUE).stderr, /takes one value/);
    assert.match(run('decode', '--strict', VALUE).stderr, /unknown option --strict/);
  });
});

describe('initdata where the administrator writes it', () => {
  const _NS = 'openshift-sandboxed-containers-operator';
  const cm = awsPeerPodsCm;
  const secret = awsPeerPodsSecret;

  test('peer-pods-cm: a good INITDATA (or DEFAULT_POD_INITDATA) passes; a bad one is a problem naming the key and the layer', () => {
    const good = validatePeerPodsConfig(cm({ INITDATA: encodeInitdata(EXAMPLE) }), secret);
    assert.deepEqual(good.problems, []);
    assert.equal(good.config?.data.INITDATA, encodeInitdata(EXAMPLE));
    for (const key of ['INITDATA', 'DEFAULT_POD_INITDATA']) {
      const head = new RegExp(`^${key} in ConfigMap peer-pods-cm: `);
      for (const row of BAD) {
        const r = validatePeerPodsConfig(cm({ [key]: row.value }), secret);
        assert.equal(r.config, undefined, row.name);
        assert.equal(r.problems.length, 1, row.name);
        assert.equal(r.problems[0]?.key, key);
        assert.match(r.problems[0]?.message ?? '', head);
        assert.match((r.problems[0]?.message ?? '').replace(head, ''), row.message, `${key}: ${row.name}`);
      }
    }
    const unused = validatePeerPodsConfig(cm({ INITDATA: encodeInitdata(doc(HEAD, `${AA_ENTRY}"x" = "y"\n`)) }), secret);
    assert.deepEqual(unused.problems, []);
    assert.deepEqual(
      unused.warnings.map((w) => w.message),
      ['INITDATA: [data] entry "x" is not read by the guest (it reads aa.toml, cdh.toml, policy.rego)'],
    );
  });

  const pod = (annotations: Record<string, string>): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'p',
      namespace: 'default',
      annotations: { [AGENT_POLICY_ANNOTATION]: encodePolicy(hardenedPolicy()), ...annotations },
    },
    spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'app', image: 'registry.example.com/app:1' }] },
  });
  const settings = { defaultType: 't3.medium', allowedTypes: [] };

  test('the pod webhook admits a good annotation and refuses a malformed one with its error', () => {
    const good = mutatePeerPod(pod({ [INITDATA_ANNOTATION]: encodeInitdata(EXAMPLE) }), settings);
    assert.equal(good.allowed, true);
    for (const row of BAD) {
      const r = mutatePeerPod(pod({ [INITDATA_ANNOTATION]: row.value }), settings);
      assert.equal(r.allowed, false, row.name);
      if (r.allowed) continue;
      assert.match(r.message, /^annotation io\.katacontainers\.config\.hypervisor\.cc_init_data: /);
      assert.match(r.message.replace(/^annotation [^:]+: /, ''), row.message, row.name);
    }
    // A pod that is not a peer pod is none of this webhook's business.
    const runc = pod({ [INITDATA_ANNOTATION]: 'x' });
    delete runc.spec?.runtimeClassName;
    assert.equal(mutatePeerPod(runc, settings).allowed, true);
  });
});
