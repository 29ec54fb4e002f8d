/** must-gather's words for logs it cannot fetch, and the tail of a long operator log. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ApiError } from '../../src/kube/errors.ts';
import { kubeletErrorReason, readTail } from '../../src/mustgather/logs.ts';

test('an unreachable kubelet is said plainly, with the node and what to check', () => {
  const raw =
    'Get "https://worker-0:10250/containerLogs/ns/p/c?tailLines=5000": dial tcp: lookup worker-0 on 10.255.255.53:53: no such host';
  const said = kubeletErrorReason(new Error(raw), 'worker-0');
  assert.match(said, /^the API server cannot reach the kubelet of node worker-0 \(lookup worker-0 on 10\.255\.255\.53:53: no such host\)/);
  assert.match(said, /oc adm node-logs worker-0/);
  assert.doesNotMatch(said, /containerLogs/);
  const other = new ApiError(403, 'Forbidden', 'pods "p" is forbidden: dial tcp is not the point');
  assert.equal(kubeletErrorReason(other, 'worker-0'), other.message, 'other failures keep their own words');
});

test('the tail of a log starts at a whole line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'osc-tail-'));
  try {
    const f = join(dir, 'osc.log');
    writeFileSync(f, 'first line\nsecond line\nthird\n');
    assert.equal(await readTail(f, 1000), 'first line\nsecond line\nthird\n');
    assert.equal(await readTail(f, 14), 'third\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
