/**
 * The default initdata osc's pod webhook injects (DEFAULT_POD_INITDATA in peer-pods-cm): off unless set;
 * checked like INITDATA; given to kata-remote pods without their own annotation; a pod with its own keeps
 * it; while the default is malformed, pods that would get it are refused (fail closed) with what to do.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DEFAULT_POD_INITDATA_KEY, INITDATA_ANNOTATION } from '../../src/api/initdata.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import type { Pod } from '../../src/kube/resources.ts';
import { validatePeerPodsConfig } from '../../src/peerpods/config.ts';
import { encodeInitdata } from '../../src/peerpods/initdata.ts';
import { mutatePeerPod } from '../../src/peerpods/mutate.ts';
import { AGENT_POLICY_ANNOTATION, encodePolicy, hardenedPolicy } from '../../src/peerpods/policy.ts';
import { peerPodAdmission } from '../../src/webhooks/peerpods.ts';
import { awsPeerPodsCm, awsPeerPodsSecret } from '../support/peerpods-fixtures.ts';

const NS = 'openshift-sandboxed-containers-operator';
const EXAMPLE = readFileSync(new URL('../fixtures/initdata/initdata.toml', import.meta.url), 'utf8');
const GOOD = encodeInitdata(EXAMPLE);
const OTHER = encodeInitdata(EXAMPLE.replace('algorithm = "sha384"', 'algorithm = "sha256"'));
/** Base64 of the TOML, not gzipped first: the guest would refuse it. */
const BAD = Buffer.from(EXAMPLE).toString('base64');
const _b64 = (s: string) => Buffer.from(s).toString('base64');

const cm = awsPeerPodsCm;
const secret = awsPeerPodsSecret;
const pod = (annotations: Record<string, string> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default', annotations: { [AGENT_POLICY_ANNOTATION]: encodePolicy(hardenedPolicy()), ...annotations } },
  spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'app', image: 'registry.example.com/app:1' }] },
});
const settings = { defaultType: 't3.medium', allowedTypes: [] };
const initdataPatch = (r: ReturnType<typeof mutatePeerPod>) =>
  r.allowed ? r.patch.find((p) => p.op === 'add' && p.path === `/metadata/annotations/${INITDATA_ANNOTATION}`) : undefined;

describe('DEFAULT_POD_INITDATA in peer-pods-cm', () => {
  test('checked like INITDATA: a good value passes, a malformed one is a problem naming the key and the layer', () => {
    assert.deepEqual(validatePeerPodsConfig(cm({ [DEFAULT_POD_INITDATA_KEY]: GOOD }), secret).problems, []);
    const bad = validatePeerPodsConfig(cm({ [DEFAULT_POD_INITDATA_KEY]: BAD }), secret);
    assert.equal(bad.problems.length, 1);
    assert.equal(bad.problems[0]?.key, DEFAULT_POD_INITDATA_KEY);
    assert.match(
      bad.problems[0]?.message ?? '',
      /^DEFAULT_POD_INITDATA in ConfigMap peer-pods-cm: the initdata is base64 of text, not of gzip/,
    );
    assert.equal(validatePeerPodsConfig(cm({ [DEFAULT_POD_INITDATA_KEY]: '' }), secret).problems[0]?.key, DEFAULT_POD_INITDATA_KEY);
  });
});

describe('the pod webhook injects the default', () => {
  test('off unless configured: no annotation added', () => {
    const r = mutatePeerPod(pod(), settings);
    assert.equal(r.allowed, true);
    assert.equal(initdataPatch(r), undefined);
  });

  test('a pod without initdata gets the default, with a warning saying so', () => {
    const r = mutatePeerPod(pod(), { ...settings, defaultInitdata: { value: GOOD } });
    assert.equal(r.allowed, true);
    assert.equal((initdataPatch(r) as { value?: unknown } | undefined)?.value, GOOD);
    assert.ok(r.allowed && r.warnings.some((w) => w.includes(`set from ${DEFAULT_POD_INITDATA_KEY}`)));
    // Applied again (the patched pod): nothing more to do.
    const patched = pod({ [INITDATA_ANNOTATION]: GOOD });
    assert.equal(initdataPatch(mutatePeerPod(patched, { ...settings, defaultInitdata: { value: GOOD } })), undefined);
  });

  test('a pod with its own initdata keeps it, even while the default is malformed', () => {
    const own = mutatePeerPod(pod({ [INITDATA_ANNOTATION]: OTHER }), { ...settings, defaultInitdata: { value: GOOD } });
    assert.equal(own.allowed, true);
    assert.equal(initdataPatch(own), undefined);
    const despite = mutatePeerPod(pod({ [INITDATA_ANNOTATION]: OTHER }), { ...settings, defaultInitdata: { value: BAD, problem: 'x' } });
    assert.equal(despite.allowed, true);
  });

  test('a malformed default refuses the pods that would get it, naming the key and the ways out', async () => {
    const admit = peerPodAdmission({} as KubeClient, NS, { hasSynced: true, get: () => cm({ [DEFAULT_POD_INITDATA_KEY]: BAD }) });
    const d = await admit({
      uid: '1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      object: pod(),
    });
    assert.equal(d.allowed, false);
    assert.match(
      d.allowed ? '' : d.message,
      /^the pod has no annotation io\.katacontainers\.config\.hypervisor\.cc_init_data and the default initdata to give it, DEFAULT_POD_INITDATA in ConfigMap peer-pods-cm, is malformed \(the initdata is base64 of text, not of gzip.*\): fix DEFAULT_POD_INITDATA .*, remove it to stop injecting a default, or give the pod its own io\.katacontainers\.config\.hypervisor\.cc_init_data$/,
    );
    // Through the same webhook, a good default is injected.
    const good = peerPodAdmission({} as KubeClient, NS, { hasSynced: true, get: () => cm({ [DEFAULT_POD_INITDATA_KEY]: GOOD }) });
    const ok = await good({
      uid: '2',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      object: pod(),
    });
    assert.equal(ok.allowed, true);
    assert.ok(ok.allowed && ok.patch?.some((p) => p.path === `/metadata/annotations/${INITDATA_ANNOTATION}` && p.value === GOOD));
  });
});
