/**
 * What an administrator does to etcd itself, through its JSON gateway and etcdutl: read the revision,
 * compact the history, save a snapshot, and restore one into a fresh data directory.
 */
import { execFile } from 'node:child_process';
import { rename, rm, writeFile } from 'node:fs/promises';

/** etcd's current revision (retried for 30 s while etcd starts). */
export async function etcdRevision(etcdUrl: string): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`${etcdUrl}/v3/kv/range`, {
        method: 'POST',
        body: JSON.stringify({ key: Buffer.from('/').toString('base64'), limit: 1 }),
      });
      const revision = Number(((await res.json()) as { header?: { revision?: string } }).header?.revision);
      if (revision) return revision;
    } catch (e) {
      if (Date.now() > deadline) throw e;
    }
    if (Date.now() > deadline) throw new Error('etcd did not say its revision');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Compacts etcd's history up to its current revision; answers the revision. */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const revision = await etcdRevision(etcdUrl);
  const res = await fetch(`${etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision: String(revision), physical: true }),
  });
  if (!res.ok) throw new Error(`etcd /v3/kv/compaction: HTTP ${res.status} ${await res.text()}`);
  return revision;
}

/**
 * Saves a snapshot of etcd to `file`, as `etcdctl snapshot save` does: etcd's Maintenance.Snapshot, the
 * whole database as of now followed by its SHA-256, which a restore checks. Answers the revision it holds.
 */
export async function saveEtcdSnapshot(etcdUrl: string, file: string): Promise<number> {
  const revision = await etcdRevision(etcdUrl);
  const res = await fetch(`${etcdUrl}/v3/maintenance/snapshot`, { method: 'POST', body: '{}' });
  if (!res.ok || !res.body) throw new Error(`etcd snapshot: HTTP ${res.status} ${await res.text()}`);
  // The gateway streams one JSON object per chunk: {"result":{"blob":"<base64>","remaining_bytes":"..."}}.
  const chunks: Buffer[] = [];
  let partial = '';
  const take = (line: string) => {
    if (!line.trim()) return;
    const m = JSON.parse(line) as { result?: { blob?: string }; error?: { message?: string } };
    if (m.error) throw new Error(`etcd snapshot: ${m.error.message}`);
    if (m.result?.blob) chunks.push(Buffer.from(m.result.blob, 'base64'));
  };
  for await (const d of res.body as AsyncIterable<Uint8Array>) {
    const lines = (partial + Buffer.from(d).toString()).split('\n');
    partial = lines.pop() ?? '';
    lines.forEach(take);
  }
  take(partial);
  await writeFile(file, Buffer.concat(chunks), { mode: 0o600 });
  return revision;
}

/** The revision a snapshot file holds (`etcdutl snapshot status`). */
export async function etcdSnapshotRevision(etcdutl: string, file: string): Promise<number> {
  const out = await run(etcdutl, ['snapshot', 'status', file, '--write-out=json']);
  const revision = out.code === 0 ? Number((JSON.parse(out.stdout) as { revision?: number }).revision) : 0;
  if (!revision) throw new Error(`etcdutl snapshot status ${file}: ${out.stderr || out.stdout}`);
  return revision;
}

/**
 * Replaces a stopped member's data directory with the snapshot's, its revision bumped by `bumpedBy` and
 * marked compacted (`etcdutl snapshot restore --bump-revision --mark-compacted`), the member named again.
 */
export async function restoreEtcdDataDir(
  etcdutl: string,
  file: string,
  member: { dataDir: string; peerPort: number; bumpedBy: number },
): Promise<void> {
  const restored = `${member.dataDir}.restored`;
  await rm(restored, { recursive: true, force: true });
  const peer = `http://127.0.0.1:${member.peerPort}`;
  const out = await run(etcdutl, [
    'snapshot',
    'restore',
    file,
    `--data-dir=${restored}`,
    '--name=osc',
    `--initial-cluster=osc=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--bump-revision=${member.bumpedBy}`,
    '--mark-compacted',
  ]);
  if (out.code !== 0) throw new Error(`etcdutl snapshot restore failed: ${out.stderr}`);
  await rm(member.dataDir, { recursive: true, force: true });
  await rename(restored, member.dataDir);
}

function run(command: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr: stderr || (err?.message ?? '') }),
    );
  });
}
