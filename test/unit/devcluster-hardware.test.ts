import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { devHardware } from '../../src/cli/commands/hardware-flags.ts';
import { CliError } from '../../src/cli/common.ts';
import { nodeHardware } from '../../src/devcluster/hardware.ts';
import { CPU_SECURITY_ANNOTATION, evaluateRules, nodeFeatures, teeHardware, teeNodeFeatureRule } from '../../src/devcluster/nfd/rules.ts';
import type { Node } from '../../src/kube/resources.ts';

const NODES = ['master-0', 'worker-0', 'worker-1'];
const withHardware = (value?: string): Node => ({
  metadata: { name: 'n', annotations: value ? { [CPU_SECURITY_ANNOTATION]: value } : {} },
});

describe("the simulated NFD's NodeFeatureRules", () => {
  test('TDX hardware: the documented rule labels the node and advertises its keys', () => {
    const out = evaluateRules([teeNodeFeatureRule('tdx')], nodeFeatures(withHardware(teeHardware('tdx', 6))));
    assert.deepEqual(out, { labels: { 'intel.feature.node.kubernetes.io/tdx': 'true' }, extendedResources: { 'tdx.intel.com/keys': '6' } });
  });
  test('SNP hardware: the ESIDs', () => {
    const out = evaluateRules([teeNodeFeatureRule('snp')], nodeFeatures(withHardware(teeHardware('snp', 3))));
    assert.deepEqual(out, {
      labels: { 'amd.feature.node.kubernetes.io/snp': 'true' },
      extendedResources: { 'sev-snp.amd.com/esids': '3' },
    });
  });
  test('no such hardware, or a rule for another TEE: nothing', () => {
    assert.deepEqual(evaluateRules([teeNodeFeatureRule('tdx')], nodeFeatures(withHardware())), { labels: {}, extendedResources: {} });
    assert.deepEqual(evaluateRules([teeNodeFeatureRule('snp')], nodeFeatures(withHardware(teeHardware('tdx', 2)))), {
      labels: {},
      extendedResources: {},
    });
  });
  test('hardware that lost its key count: the label, but no resource (as nfd-master skips a missing back-reference)', () => {
    const out = evaluateRules([teeNodeFeatureRule('tdx')], nodeFeatures(withHardware('tdx.enabled=true')));
    assert.deepEqual(out, { labels: { 'intel.feature.node.kubernetes.io/tdx': 'true' }, extendedResources: {} });
  });
});

describe('osc start --tee, --gpu-nodes, --cluster-version', () => {
  const refused = (f: () => unknown, re: RegExp) =>
    assert.throws(f, (e: unknown) => e instanceof CliError && re.test(e.message), `expected a CliError matching ${re}`);
  test('--tee tdx on every worker by default, 4 slots', () => {
    const hw = devHardware({ tee: 'tdx' }, NODES, false);
    assert.deepEqual(hw, { tee: { kind: 'tdx' } });
    assert.deepEqual(nodeHardware(hw, 'worker-0', 'worker').annotations, { [CPU_SECURITY_ANNOTATION]: teeHardware('tdx', 4) });
    assert.deepEqual(nodeHardware(hw, 'master-0', 'master').annotations, {});
  });
  test('--tee-nodes and --key-slots', () => {
    const hw = devHardware({ tee: 'snp', teeNodes: 'worker-1', keySlots: 2 }, NODES, false);
    assert.deepEqual(nodeHardware(hw, 'worker-0', 'worker').annotations, {});
    assert.deepEqual(nodeHardware(hw, 'worker-1', 'worker').annotations, { [CPU_SECURITY_ANNOTATION]: teeHardware('snp', 2) });
  });
  test('--gpu-nodes: the GPU operator labels', () => {
    const hw = devHardware({ gpuNodes: 'worker-0' }, NODES, false);
    assert.equal(nodeHardware(hw, 'worker-0', 'worker').labels['nvidia.com/gpu.present'], 'true');
    assert.deepEqual(nodeHardware(hw, 'worker-1', 'worker').labels, {});
  });
  test('bad flags name the flag and the fix', () => {
    refused(() => devHardware({ tee: 'sgx' }, NODES, false), /--tee sgx: use --tee tdx or snp/);
    refused(
      () => devHardware({ tee: 'tdx', teeNodes: 'worker-9' }, NODES, false),
      /--tee-nodes names a node this dev cluster does not have: worker-9/,
    );
    refused(() => devHardware({ teeNodes: 'worker-0' }, NODES, false), /--tee-nodes needs --tee tdx\|snp/);
    // Plain Kubernetes has a TEE too (with NFD as its add-on), but no OpenShift release.
    assert.deepEqual(devHardware({ tee: 'snp', keySlots: 1 }, NODES, true), { tee: { kind: 'snp', keySlots: 1 } });
    refused(() => devHardware({ clusterVersion: '4.20.1' }, NODES, true), /--cluster-version sets the OpenShift ClusterVersion/);
    refused(
      () => devHardware({ clusterVersion: '4.20' }, NODES, false),
      /--cluster-version 4.20: give an OpenShift release as major.minor.patch/,
    );
    refused(() => devHardware({ gpuNodes: ' , ' }, NODES, false), /--gpu-nodes is empty/);
  });
});
