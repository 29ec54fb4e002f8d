import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { objectName } from '../../src/api/meta.ts';
import { ControlPlane, freePort } from '../../src/devcluster/controlplane.ts';
import { nodeObject } from '../../src/devcluster/nodes.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { ConfigMaps, Leases, Nodes, Pods } from '../../src/kube/resources.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);

/** Processes whose command line mentions the data directory (etcd and kube-apiserver carry it in flags). */
async function processesUsing(dir: string): Promise<string[]> {
  try {
    const { stdout } = await exec('pgrep', ['-f', '-a', dir]);
    return stdout
      .split('\n')
      .filter((l) => l.trim() && !l.includes('pgrep'))
      .map((l) => l.slice(0, 120));
  } catch {
    return []; // pgrep exits 1 when nothing matches
  }
}

/** A child process that starts a control plane, prints its data directory, and waits to be killed. */
function startChild(detached: boolean) {
  const script = `
    import { ControlPlane } from ${JSON.stringify(new URL('../../src/devcluster/controlplane.ts', import.meta.url).pathname)};
    const cp = await ControlPlane.start();
    console.log('DATADIR ' + cp.dataDir);
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'], detached });
  const dataDir = new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /DATADIR (\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`child exited early with ${code}`)));
  });
  return { child, dataDir };
}

describe('the control plane never outlives its owner', () => {
  test('SIGKILL of the owning process: etcd and kube-apiserver stop and the data directory goes', async () => {
    const { child, dataDir } = startChild(false);
    const dir = await dataDir;
    assert.ok((await processesUsing(dir)).length >= 2, 'etcd and kube-apiserver run');
    child.kill('SIGKILL');
    await waitFor(async () => (await processesUsing(dir)).length === 0 && !existsSync(dir), {
      timeoutMs: 60_000,
      message: `no process left using ${dir}`,
    });
  });

  test('Ctrl-C (SIGINT to the whole process group): nothing survives', async () => {
    const { child, dataDir } = startChild(true);
    const dir = await dataDir;
    assert.ok((await processesUsing(dir)).length >= 2);
    process.kill(-(child.pid ?? 0), 'SIGINT'); // what a terminal does on Ctrl-C
    await waitFor(async () => (await processesUsing(dir)).length === 0 && !existsSync(dir), {
      timeoutMs: 60_000,
      message: `no process left using ${dir}`,
    });
  });
});

test('a port taken between finding it free and binding it: the start is tried again with new ports', async () => {
  // Another process holds the port handed to the API server on the first try, as a parallel test's could.
  const holder = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
  const taken = (holder.address() as { port: number }).port;
  let calls = 0;
  try {
    const cp = await ControlPlane.start({ freePort: async () => (++calls === 3 ? taken : freePort()) });
    try {
      assert.ok(calls >= 6, `a second set of ports was asked for (asked ${calls})`);
      assert.notEqual(new URL(cp.apiserverUrl).port, String(taken));
      assert.ok(await cp.client.request('GET', '/readyz'));
    } finally {
      await cp.stop();
    }
  } finally {
    holder.close();
  }
});

test('etcd restored from an older snapshot: objects as they were, resource versions past every one seen, informers list again', async () => {
  const cp = await ControlPlane.start();
  const ac = new AbortController();
  try {
    const c = cp.client;
    await c.create(ConfigMaps, { metadata: { name: 'before', namespace: 'default' }, data: { v: '1' } });
    const snapshot = join(cp.dataDir, 'snapshot.db');
    await cp.snapshotEtcd(snapshot);
    await c.patch(ConfigMaps, 'before', { data: { v: '2' } }, { namespace: 'default' });
    const after = await c.create(ConfigMaps, { metadata: { name: 'after', namespace: 'default' }, data: { v: '1' } });
    // A client of its own, as another process has: the dev cluster's own client is told to list again after
    // a restore (KubeClient.relistAll), this one must find out from its watch.
    const informer = new Informer(new KubeClient(cp.kubeConfig), ConfigMaps, { namespace: 'default' });
    void informer.run(ac.signal);
    await informer.waitForSync(ac.signal);
    const own = new Informer(c, ConfigMaps, { namespace: 'default' });
    void own.run(ac.signal);
    await own.waitForSync(ac.signal);
    assert.equal(informer.get('default/before')?.data?.v, '2');

    await cp.restoreEtcd(snapshot);
    assert.equal((await c.get(ConfigMaps, 'before', 'default')).data?.v, '1', 'the change after the snapshot is gone');
    assert.equal(await c.find(ConfigMaps, 'after', 'default'), undefined, 'the object made after the snapshot is gone');
    const list = await c.list(ConfigMaps, { namespace: 'default' });
    assert.ok(
      BigInt(list.metadata?.resourceVersion ?? '0') > BigInt(after.metadata.resourceVersion ?? '0'),
      'the restored store answers resource versions past any seen before the restore',
    );
    // The informer's watch resumes from a version the restored store marked compacted: 410 Gone, then a list.
    await waitFor(() => informer.get('default/before')?.data?.v === '1' && !informer.get('default/after'), {
      timeoutMs: 120_000,
      message: 'the informer sees the restored state',
    });
    assert.ok(informer.stats.relistsOnGone >= 1, 'it listed again after 410 Gone');
    // The dev cluster's own caches are told to list again, 410 or not.
    await waitFor(() => own.get('default/before')?.data?.v === '1' && !own.get('default/after'), {
      timeoutMs: 120_000,
      message: "the dev cluster's own informer sees the restored state",
    });
    assert.ok(own.stats.lists >= 2, 'it listed again');
    assert.ok(existsSync(cp.dataDir), 'the data directory outlived the restart of etcd');
  } finally {
    ac.abort();
    await cp.stop();
  }
});

test('etcd restored from before a node joined: its kubelet (kwok) heartbeats again and runs its pods', async () => {
  const cp = await ControlPlane.start();
  try {
    const c = cp.client;
    const node = (name: string) => nodeObject({ name, role: 'worker', distribution: 'kubernetes' });
    const lease = (name: string) => c.find(Leases, name, 'kube-node-lease');
    await c.create(Nodes, node('before'));
    await waitFor(async () => !!(await lease('before')), { timeoutMs: 60_000, message: 'the first node heartbeats' });
    const snapshot = join(cp.dataDir, 'before-the-join.db');
    await cp.snapshotEtcd(snapshot);
    await c.create(Nodes, node('joined'));
    await waitFor(async () => !!(await lease('joined')), { timeoutMs: 60_000, message: 'the node that joined heartbeats' });

    await cp.restoreEtcd(snapshot);
    assert.equal(await c.find(Nodes, 'joined'), undefined, 'the restore took the node back');
    // Its kubelet registers it again (the harness's intent, or the administrator).
    await c.create(Nodes, node('joined'));
    // A kubelet whose Lease is gone makes it again; kwok, its cache untold, renewed the gone one for ever.
    await waitFor(async () => !!(await lease('joined')), { timeoutMs: 90_000, message: "the node's Lease made again" });
    const pod = await c.create(Pods, {
      metadata: { name: 'after-the-restore', namespace: 'default' },
      spec: { nodeName: 'joined', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    });
    await waitFor(async () => (await c.find(Pods, objectName(pod), 'default'))?.status?.phase === 'Running', {
      timeoutMs: 90_000,
      message: 'a pod on the node that joined runs',
    });
    const before = (await lease('joined'))?.spec?.renewTime;
    await waitFor(async () => (await lease('joined'))?.spec?.renewTime !== before, { timeoutMs: 90_000, message: 'the Lease is renewed' });
  } finally {
    await cp.stop();
  }
});
