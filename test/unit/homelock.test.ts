/** The home directory's lock: one run per home, stale locks (holder gone, or its pid reused) taken over. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CliError } from '../../src/cli/common.ts';
import { HOME_LOCK_FILE, lockHome, processStartTime } from '../../src/cli/homelock.ts';

const homes: string[] = [];
const newHome = () => {
  const h = mkdtempSync(join(tmpdir(), 'osc-lock-'));
  homes.push(h);
  return h;
};
after(() => {
  for (const h of homes) rmSync(h, { recursive: true, force: true });
});
const opts = { command: 'osc start', secondHomeHint: 'npm start -- --home .osc-2' };

test('a second run in the same home is refused with the holder pid and how to run a second cluster', async () => {
  const home = newHome();
  const first = await lockHome(home, opts);
  await assert.rejects(lockHome(home, opts), (e: unknown) => {
    assert.ok(e instanceof CliError);
    assert.match(e.message, new RegExp(`in use by another osc start \\(pid ${process.pid}, since `));
    assert.match(e.message, /kill \d+/);
    assert.match(e.message, /npm start -- --home \.osc-2$/);
    return true;
  });
  assert.equal(JSON.parse(readFileSync(first.path, 'utf8')).pid, process.pid, 'the refused run leaves the lock alone');
  await first.release();
  assert.equal(existsSync(first.path), false);
  const again = await lockHome(home, opts);
  assert.equal(again.tookOverFrom, undefined, 'a released lock is simply taken');
  await again.release();
});

test('the lock of a process that is gone is taken over', async () => {
  const home = newHome();
  const gone = spawnSync(process.execPath, ['-e', '']).pid;
  writeFileSync(
    join(home, HOME_LOCK_FILE),
    JSON.stringify({ pid: gone, startTime: 1, command: 'osc start', since: '2026-01-01T00:00:00Z' }),
  );
  const lock = await lockHome(home, opts);
  assert.equal(lock.tookOverFrom?.pid, gone);
  assert.equal(JSON.parse(readFileSync(lock.path, 'utf8')).pid, process.pid);
  await lock.release();
});

test('a lock whose pid now belongs to another program (another start time) is taken over', async () => {
  const home = newHome();
  const start = processStartTime(process.pid);
  assert.notEqual(start, null, 'this test needs /proc');
  writeFileSync(
    join(home, HOME_LOCK_FILE),
    JSON.stringify({ pid: process.pid, startTime: (start ?? 0) - 1, command: 'osc dev', since: '' }),
  );
  const lock = await lockHome(home, opts);
  assert.equal(lock.tookOverFrom?.command, 'osc dev');
  await lock.release();
});

test('an unreadable lock is taken over; release leaves a lock that is not its own', async () => {
  const home = newHome();
  writeFileSync(join(home, HOME_LOCK_FILE), 'not json');
  const lock = await lockHome(home, opts);
  assert.ok(lock.tookOverFrom);
  writeFileSync(lock.path, JSON.stringify({ pid: 1, startTime: null, command: 'osc start', since: '' }));
  await lock.release();
  assert.equal(existsSync(lock.path), true);
});
