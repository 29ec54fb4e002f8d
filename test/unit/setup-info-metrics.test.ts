import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { KataConfig } from '../../src/api/kataconfig.ts';
import { cloudProvider, registerSetupInfo, type SetupInfoInput, setupInfo, setupType } from '../../src/controllers/monitor/setup-info.ts';

const kataConfig = (enablePeerPods = false): KataConfig => ({
  apiVersion: 'kataconfiguration.openshift.io/v1',
  kind: 'KataConfig',
  metadata: { name: 'example-kataconfig', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { enablePeerPods },
});

const input = (over: Partial<SetupInfoInput> = {}): SetupInfoInput => ({
  kataConfigs: [kataConfig()],
  platformType: 'AWS',
  runtimeClasses: [],
  podsByRuntimeClass: () => 0,
  ...over,
});

describe('osc_setup_info', () => {
  test('setup_type: peer pods from the KataConfig, confidential from the feature gate', () => {
    const rows: [boolean, Record<string, string> | undefined, string][] = [
      [false, undefined, 'baremetal'],
      [false, { confidential: 'false' }, 'baremetal'],
      [false, { confidential: 'true' }, 'confidential_baremetal'],
      [true, undefined, 'peerpods'],
      [true, { confidential: 'true' }, 'confidential_peerpods'],
      // Read as osc reads the gate everywhere: only "true" and "false"; a refused value counts as the default.
      [true, { confidential: '1' }, 'peerpods'],
      [true, { confidential: 'yes' }, 'peerpods'],
    ];
    for (const [peerPods, gates, want] of rows)
      assert.equal(setupType(kataConfig(peerPods), gates), want, JSON.stringify([peerPods, gates]));
  });

  test('cloud_provider: the Infrastructure platform type in lower case, none, or unknown', () => {
    const rows: [string | undefined, string][] = [
      ['AWS', 'aws'],
      ['Azure', 'azure'],
      ['GCP', 'gcp'],
      ['Libvirt', 'libvirt'],
      ['IBMCloud', 'ibmcloud'],
      ['', 'none'],
      ['BareMetal', 'unknown'],
      ['VSphere', 'unknown'],
      [undefined, 'unknown'],
    ];
    for (const [type, want] of rows) assert.equal(cloudProvider(type), want, String(type));
  });

  test('no KataConfig: no setup series and no pod counts', () => {
    const info = setupInfo(input({ kataConfigs: [], runtimeClasses: ['kata'], podsByRuntimeClass: () => 3 }));
    assert.deepEqual(info, { setup: undefined, kataPods: [] });
  });

  test('osc_kata_pods counts pods for each kata RuntimeClass that exists, never for others', () => {
    const counts: Record<string, number> = { kata: 2, 'kata-remote': 5, 'kata-cc': 1, runc: 9 };
    const info = setupInfo(input({ runtimeClasses: ['kata', 'kata-remote', 'runc'], podsByRuntimeClass: (rc) => counts[rc] ?? 0 }));
    assert.deepEqual(info.kataPods, [
      { runtimeclass: 'kata', pods: 2 },
      { runtimeclass: 'kata-remote', pods: 5 },
    ]);
  });

  test('the registry shows the current series only, read at each scrape', async () => {
    const registry = new Registry();
    let current = input({ runtimeClasses: ['kata'], podsByRuntimeClass: () => 4 });
    registerSetupInfo(registry, () => current);
    const first = await registry.metrics();
    assert.match(first, /^osc_setup_info\{setup_type="baremetal",cloud_provider="aws"\} 1$/m);
    assert.match(first, /^osc_kata_pods\{runtimeclass="kata"\} 4$/m);

    current = input({
      kataConfigs: [kataConfig(true)],
      platformType: 'Azure',
      runtimeClasses: ['kata', 'kata-remote'],
      podsByRuntimeClass: () => 1,
    });
    const second = await registry.metrics();
    assert.match(second, /^osc_setup_info\{setup_type="peerpods",cloud_provider="azure"\} 1$/m);
    assert.doesNotMatch(second, /setup_type="baremetal"/);
    assert.match(second, /^osc_kata_pods\{runtimeclass="kata-remote"\} 1$/m);

    current = input({ kataConfigs: [] });
    const third = await registry.metrics();
    assert.doesNotMatch(third, /^osc_setup_info\{/m);
    assert.doesNotMatch(third, /^osc_kata_pods\{/m);
  });
});
