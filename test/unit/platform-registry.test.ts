/**
 * The platform registry (src/platform/index.ts): each platform folder's descriptor is all that the CLI,
 * the installer's RBAC and discovery know of it, so a third platform is a folder and one registry line.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { DISTRIBUTIONS } from '../../src/devcluster/nodes.ts';
import { clusterRules, namespaceRules } from '../../src/install/rbac.ts';
import {
  createPlatform,
  discoverPlatform,
  platformDescriptor,
  platformDescriptors,
  platformNames,
  registerPlatform,
} from '../../src/platform/index.ts';
import type { Platform, PlatformDescriptor } from '../../src/platform/platform.ts';
import { runOsc } from '../support/cli.ts';

/** A platform of a kind osc does not have: what a new folder's descriptor.ts would export. */
const example: PlatformDescriptor<{ pool?: string }> = {
  name: 'example',
  summary: 'an example installer',
  recognises: (groups) => groups.has('example.osc.dev'),
  rbac: {
    cluster: [{ apiGroups: ['example.osc.dev'], resources: ['installers'], verbs: ['get', 'list', 'watch'] }],
    namespace: [{ apiGroups: ['example.osc.dev'], resources: ['jobs'], verbs: ['create'], resourceNames: ['example-installer'] }],
  },
  devCluster: false,
  parseSettings(raw) {
    for (const key of Object.keys(raw)) if (key !== 'pool') throw new Error(`the example platform has no setting ${key}`);
    return raw.pool === undefined ? {} : { pool: String(raw.pool) };
  },
  async create(_opts, settings) {
    return { name: 'example', settings } as unknown as Platform;
  },
};

describe('the platform registry', () => {
  const unregister = registerPlatform(example);
  after(unregister);

  test('a registered platform is a choice of osc run and osc install, and listed in their help', async () => {
    const run = await runOsc(['run', '--help']);
    assert.match(run.stdout.replace(/\s+/g, ' '), /example \(an example installer\)/);
    assert.match(run.stdout.replace(/\s+/g, ' '), /choices: "example", "openshift", "kubernetes"/);
    const install = await runOsc(['install', '--help']);
    assert.match(install.stdout.replace(/\s+/g, ' '), /choices: "example", "openshift", "kubernetes"/);
    // The dev cluster offers only what it simulates.
    const start = await runOsc(['start', '--help']);
    assert.doesNotMatch(start.stdout, /"example"/);
  });

  test("the installer's RBAC carries a registered platform's rules, and only for it", async () => {
    assert.ok(clusterRules('example').some((r) => r.resources.includes('installers')));
    assert.ok(namespaceRules('example').some((r) => r.resourceNames?.includes('example-installer')));
    assert.ok(!clusterRules('kubernetes').some((r) => r.resources.includes('installers')));
    const dry = await runOsc(['install', '--dry-run', '--distribution', 'example']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /example\.osc\.dev/);
    assert.doesNotMatch(dry.stdout, /machineconfiguration\.openshift\.io/, 'no other platform rules');
  });

  test('discovery asks a registered platform first, and its settings are checked by its own schema', async () => {
    assert.equal(discoverPlatform(new Set(['apps', 'example.osc.dev'])), 'example');
    assert.equal(discoverPlatform(new Set(['apps', 'machineconfiguration.openshift.io'])), 'openshift');
    assert.equal(discoverPlatform(new Set(['apps'])), 'kubernetes');
    const made = (await createPlatform('example', {
      settings: { example: { pool: 'a' }, kubernetes: { maxUnavailable: 3 } },
    })) as unknown as {
      settings: unknown;
    };
    assert.deepEqual(made.settings, { pool: 'a' });
    await assert.rejects(createPlatform('example', { settings: { example: { size: 1 } } }), /the example platform has no setting size/);
  });

  test('a name no platform has is refused with the choices', async () => {
    assert.throws(
      () => platformDescriptor('nomad'),
      /the nomad platform is not available in this build of osc: run it on example or openshift or kubernetes \(--distribution\)/,
    );
    assert.throws(() => clusterRules('nomad'), /--distribution/);
  });

  test('registering a name twice is refused; unregistering leaves the build as it was', () => {
    assert.throws(() => registerPlatform(example), /already registered/);
    const again = { ...example, name: 'example-2' };
    const undo = registerPlatform(again);
    assert.equal(platformNames()[0], 'example-2');
    undo();
    assert.deepEqual(platformNames(), ['example', 'openshift', 'kubernetes']);
  });
});

describe("the build's own platforms", () => {
  test('openshift then the catch-all kubernetes; the dev cluster simulates exactly those that say so', () => {
    const own = platformDescriptors().filter((p) => p.name !== 'example');
    assert.deepEqual(
      own.map((p) => p.name),
      ['openshift', 'kubernetes'],
    );
    assert.deepEqual(
      own.filter((p) => p.devCluster).map((p) => p.name),
      [...DISTRIBUTIONS],
    );
  });

  test("the kubernetes platform's settings: bad values and unknown names are refused, naming the flag", async () => {
    const kubernetes = platformDescriptor('kubernetes');
    assert.deepEqual(kubernetes.parseSettings({ maxUnavailable: 2, installDeadlineMs: 60_000, image: 'r.example/k:1' }), {
      maxUnavailable: 2,
      installDeadlineMs: 60_000,
      image: 'r.example/k:1',
    });
    assert.throws(
      () => kubernetes.parseSettings({ maxUnavailable: 0 }),
      /kubernetes platform setting maxUnavailable \(--max-unavailable\) must be a whole number of nodes, 1 or more, not 0/,
    );
    assert.throws(() => kubernetes.parseSettings({ shim: 'vmware' }), /setting shim must be one of qemu, .*not "vmware"/);
    assert.throws(
      () => kubernetes.parseSettings({ maxunavailable: 2 }),
      /has no setting maxunavailable: its settings are image, shim, maxUnavailable/,
    );
    await assert.rejects(createPlatform('kubernetes', { settings: { kubernetes: { installDeadlineMs: -1 } } }), /--install-deadline/);
    const made = await createPlatform('kubernetes', { namespace: 'ns-1', settings: { kubernetes: { maxUnavailable: 2 } } });
    assert.deepEqual(
      [made.name, (made as unknown as { opts: { namespace: string; maxUnavailable: number } }).opts.namespace],
      ['kubernetes', 'ns-1'],
    );
  });

  test('openshift has no settings of its own', () => {
    assert.throws(() => platformDescriptor('openshift').parseSettings({ image: 'x' }), /the openshift platform has no setting image/);
  });
});
