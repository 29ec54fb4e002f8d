/**
 * The simulated nodes' journals: the lines a kata pod sandbox and a runtime restart leave, in their real
 * shapes, and what must-gather's node-log script prints from them on the simulated host.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { NodeJournal, runJournalScript } from '../../src/devcluster/journal.ts';
import { type Sandbox, sandboxId, sandboxStarted, sandboxStopped } from '../../src/devcluster/journal-lines.ts';
import type { Node } from '../../src/kube/resources.ts';
import { journalScript } from '../../src/mustgather/nodelogs.ts';

const dir = mkdtempSync(join(tmpdir(), 'osc-journal-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const AT = Date.parse('2026-11-25T16:07:13.250Z');
const pod = { namespace: 'default', name: 'hello', uid: '1f0c9a52-7d1e-4c55-9f8e-0d4b2a6c3e11' };
const crioNode = { metadata: { name: 'worker-0' } } as Node;
const containerdNode = { metadata: { name: 'worker-1' }, status: { nodeInfo: { containerRuntimeVersion: 'containerd://2.1.4' } } } as Node;

/** The sections of a node-log pod's output, by their `=== journalctl ...` header. */
function sections(out: string[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of out) {
    if (line.startsWith('=== journalctl ')) m.set(line.slice(15), (current = []));
    else current.push(line);
  }
  return m;
}

test('a kata pod on a CRI-O node: CRI-O runs the sandbox, the shim starts QEMU and virtiofsd; must-gather reads each where support looks', () => {
  const journal = new NodeJournal(join(dir, 'crio'));
  const s: Sandbox = { ...pod, handler: 'kata', runtime: 'crio', runtimePid: journal.pidOf('worker-0', 'crio') };
  journal.writeLines('worker-0', sandboxStarted(s, new Date(AT)), AT);
  journal.writeLines('worker-0', sandboxStopped(s, new Date(AT + 60_000)), AT + 60_000);
  const out = sections(runJournalScript(journalScript(crioNode), 'worker-0', journal.entries('worker-0'), AT + 120_000));
  const sb = sandboxId(pod.uid);
  assert.match(sb, /^[0-9a-f]{64}$/);

  const crio = out.get('-u crio') ?? [];
  assert.match(
    crio[0] ?? '',
    /^Nov 25 16:07:13 worker-0 crio\[2231\]: time="2026-11-25T16:07:13\.250000000Z" level=info msg="Running pod sandbox: default\/hello\/POD" id=[0-9a-f-]{36} name=\/runtime\.v1\.RuntimeService\/RunPodSandbox$/,
  );
  assert.ok(crio.some((l) => l.includes(`msg="Ran pod sandbox ${sb} with infra container: default/hello/POD"`)));
  assert.ok(crio.some((l) => l.includes(`msg="Stopped pod sandbox: ${sb}"`)));
  // The shim runs in CRI-O's cgroup: its lines are CRI-O's unit's too, as the documentation says of QEMU's.
  assert.ok(
    crio.some((l) => / kata\[\d+\]: .*Start logging QEMU/.test(l)),
    crio.join('\n'),
  );

  const kata = out.get('-t kata') ?? [];
  // The documentation's example line, field for field.
  const start = new RegExp(
    `^Nov 25 16:07:13 worker-0 kata\\[(\\d+)\\]: time="[^"]+" level=info msg="Start logging QEMU \\(qemuPid=(\\d+)\\)" name=containerd-shim-v2 pid=\\1 sandbox=${sb} source=virtcontainers/hypervisor subsystem=qemu$`,
  );
  assert.ok(
    kata.some((l) => start.test(l)),
    kata.join('\n'),
  );
  assert.ok(
    kata.some((l) =>
      /msg="created vm path" name=containerd-shim-v2 pid=\d+ sandbox=\S+ source=virtcontainers\/hypervisor subsystem=qemu vm path=\/run\/vc\/vm\//.test(
        l,
      ),
    ),
  );
  assert.ok(kata.every((l) => / kata\[\d+\]: /.test(l)));

  const qemu = out.get("-t kata -g 'qemuPid=[0-9]+'") ?? [];
  assert.deepEqual(
    qemu.map((l) => /msg="(.*?)"/.exec(l)?.[1]),
    [
      `Start logging QEMU (qemuPid=${/qemuPid=(\d+)/.exec(qemu[0] ?? '')?.[1]})`,
      `Stop logging QEMU (qemuPid=${/qemuPid=(\d+)/.exec(qemu[0] ?? '')?.[1]})`,
    ],
  );
  assert.deepEqual(
    (out.get('-t virtiofsd') ?? []).map((l) => l.replace(/^.*virtiofsd\[\d+\]: /, '')),
    ['Waiting for vhost-user socket connection...', 'Client connected, servicing requests', 'Client disconnected, shutting down'],
  );
  assert.deepEqual(out.get('-u kubelet'), ['-- No entries --']);
});

test('a peer pod: the shim asks the remote hypervisor for the VM; no QEMU and no virtiofsd run on the node', () => {
  const journal = new NodeJournal(join(dir, 'remote'));
  const s: Sandbox = { ...pod, handler: 'kata-remote', runtime: 'crio', runtimePid: 2231 };
  journal.writeLines('worker-0', sandboxStarted(s, new Date(AT)), AT);
  const out = sections(runJournalScript(journalScript(crioNode), 'worker-0', journal.entries('worker-0'), AT + 1000));
  assert.match(
    (out.get('-t kata') ?? []).join('\n'),
    /kata\[\d+\]: time="[^"]+" level=info msg="calling remote hypervisor StartVM \(timeout: 600\)" name=containerd-shim-v2 pid=\d+ sandbox=[0-9a-f]{64} source=virtcontainers\/hypervisor$/,
  );
  assert.deepEqual(out.get("-t kata -g 'qemuPid=[0-9]+'"), ['-- No entries --']);
  assert.deepEqual(out.get('-t virtiofsd'), ['-- No entries --']);
});

test('a containerd node: kata-deploy’s restart and a kata-qemu sandbox in containerd’s unit, with the new pid after the restart', () => {
  const journal = new NodeJournal(join(dir, 'containerd'));
  const before = journal.pidOf('worker-1', 'containerd');
  journal.restartRuntime('worker-1', 'containerd', AT);
  const after = journal.pidOf('worker-1', 'containerd');
  assert.notEqual(after, before);
  const s: Sandbox = { ...pod, handler: 'kata-qemu', runtime: 'containerd', runtimePid: after };
  journal.writeLines('worker-1', sandboxStarted(s, new Date(AT + 1000)), AT + 1000);
  journal.writeLines('worker-1', sandboxStopped(s, new Date(AT + 2000)), AT + 2000);
  const out = sections(runJournalScript(journalScript(containerdNode), 'worker-1', journal.entries('worker-1'), AT + 3000));
  const unit = (out.get('-u containerd') ?? []).map((l) => l.replace(/^Nov 25 [\d:]{8} worker-1 /, ''));
  assert.deepEqual(unit.slice(0, 7), [
    'systemd[1]: Stopping containerd.service - containerd container runtime...',
    `containerd[${before}]: time="2026-11-25T16:07:13.250000000Z" level=info msg="Stop CRI service"`,
    'systemd[1]: containerd.service: Deactivated successfully.',
    'systemd[1]: Stopped containerd.service - containerd container runtime.',
    'systemd[1]: Starting containerd.service - containerd container runtime...',
    `containerd[${after}]: time="2026-11-25T16:07:13.250000000Z" level=info msg="containerd successfully booted in 0.052714s"`,
    'systemd[1]: Started containerd.service - containerd container runtime.',
  ]);
  const sb = sandboxId(pod.uid);
  assert.ok(
    unit.includes(
      `containerd[${after}]: time="2026-11-25T16:07:14.250000000Z" level=info msg="RunPodSandbox for &PodSandboxMetadata{Name:hello,Uid:${pod.uid},Namespace:default,Attempt:0,} returns sandbox id \\"${sb}\\""`,
    ),
    unit.join('\n'),
  );
  assert.ok(unit.some((l) => l.endsWith(`msg="StopPodSandbox for \\"${sb}\\" returns successfully"`)));
  assert.equal((out.get("-t kata -g 'qemuPid=[0-9]+'") ?? []).length, 2);
  assert.equal(out.has('-u crio'), false, 'a containerd node is not asked for CRI-O');
});

test('journalctl on the simulated host: the last day only, smart-case patterns, unknown options and commands refused', () => {
  const journal = new NodeJournal(join(dir, 'filters'));
  journal.write('worker-0', { at: AT - 2 * 86_400_000, unit: 'crio', ident: 'crio', message: 'two days old' });
  journal.write('worker-0', { at: AT, unit: 'crio', ident: 'crio', message: 'Started pod sandbox' });
  const run = (script: string) => runJournalScript(script, 'worker-0', journal.entries('worker-0'), AT + 1000);
  assert.deepEqual(
    run('journalctl --no-pager --since=-1d -u crio.service').map((l) => l.replace(/^.*: /, '')),
    ['Started pod sandbox'],
  );
  assert.equal(run('journalctl --since=-3d -u crio').length, 2);
  assert.match(run("journalctl --since=-1d -u crio -g 'started pod'")[0] ?? '', /Started pod sandbox$/, 'lower case: case-insensitive');
  assert.deepEqual(run("journalctl --since=-1d -u crio -g 'STARTED POD'"), ['-- No entries --'], 'a capital: case-sensitive');
  assert.deepEqual(run('journalctl --bogus'), ["journalctl: unrecognized option '--bogus'"]);
  assert.deepEqual(run('dmesg'), ['sh: dmesg: command not found']);
  assert.deepEqual(run('echo "=== journalctl -u crio"; journalctl -t kata || echo "(journalctl failed: $?)"'), [
    '=== journalctl -u crio',
    '-- No entries --',
  ]);
});
