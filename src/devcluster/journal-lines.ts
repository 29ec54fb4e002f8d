/**
 * The journal lines a node's container runtime, kata shim, QEMU and virtiofsd write, in their real shapes: a
 * pod sandbox started and stopped through CRI-O or containerd with the kata runtime (a local QEMU VM, or a
 * peer pod's VM through the remote hypervisor), and a container runtime restarted (as kata-deploy does when it
 * installs or removes kata). Pure: the caller gives the time and the process ids.
 *
 * The shapes: CRI-O and containerd log with logrus's text format (`time=... level=... msg=...` then the fields);
 * the kata shim logs to syslog as `kata`, with its fields sorted by name (`name=containerd-shim-v2 pid=...
 * sandbox=... source=... subsystem=...`), and runs in the runtime's cgroup, so its lines are the runtime
 * unit's too; QEMU's own output reaches the journal only through the shim, between its "Start logging QEMU
 * (qemuPid=N)" and "Stop logging QEMU (qemuPid=N)" lines; virtiofsd logs to syslog as `virtiofsd`.
 */
import { createHash } from 'node:crypto';

/** A journal entry without its time (the caller stamps one instant on a whole group). */
export interface Line {
  /** The systemd unit the entry belongs to (`journalctl -u`), when it has one. */
  unit?: string;
  /** The syslog identifier (`-t`), printed before the pid. */
  ident: string;
  pid: number;
  message: string;
}
export type RuntimeUnit = 'crio' | 'containerd';

export interface Sandbox {
  namespace: string;
  name: string;
  uid: string;
  /** The RuntimeClass handler: `kata-remote` runs the VM in the cloud, every other kata handler a local QEMU. */
  handler: string;
  runtime: RuntimeUnit;
  /** The runtime's process id. */
  runtimePid: number;
}

/** The sandbox's id (64 hex digits, as CRI-O and containerd make them), stable for a pod. */
export const sandboxId = (podUID: string): string => createHash('sha256').update(`sandbox/${podUID}`).digest('hex');

/** The shim's, virtiofsd's and QEMU's pids: each sandbox has its own processes, started one after another. */
function pids(sandbox: string): { shim: number; virtiofsd: number; qemu: number } {
  const shim = 30_000 + (Number.parseInt(sandbox.slice(0, 6), 16) % 30_000);
  return { shim, virtiofsd: shim + 14, qemu: shim + 21 };
}

/** CRI's request id (CRI-O's `id=` field): a UUID per call. */
const requestId = (sandbox: string, call: string) => {
  const h = createHash('sha256').update(`${call}/${sandbox}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};

export const logrus = (at: Date, level: string, msg: string, fields = '') =>
  `time="${at.toISOString().replace('Z', '000000Z')}" level=${level} msg=${JSON.stringify(msg)}${fields ? ` ${fields}` : ''}`;

/** logrus's text fields: sorted by name, a value quoted only when it needs to be. */
const fieldsOf = (fields: Record<string, string | number>) =>
  Object.keys(fields)
    .sort()
    .map((k) => `${k}=${/^[\w./:-]+$/.test(String(fields[k])) ? fields[k] : JSON.stringify(String(fields[k]))}`)
    .join(' ');

function kataLines(s: Sandbox, sb: string, at: Date, phase: 'start' | 'stop'): Line[] {
  const p = pids(sb);
  const kata = (msg: string, fields: Record<string, string | number> = {}, subsystem: string | null = 'qemu'): Line => ({
    unit: s.runtime,
    ident: 'kata',
    pid: p.shim,
    message: logrus(
      at,
      'info',
      msg,
      fieldsOf({
        ...fields,
        name: 'containerd-shim-v2',
        pid: p.shim,
        sandbox: sb,
        source: 'virtcontainers/hypervisor',
        ...(subsystem ? { subsystem } : {}),
      }),
    ),
  });
  const virtiofsd = (message: string): Line => ({ unit: s.runtime, ident: 'virtiofsd', pid: p.virtiofsd, message });
  const vmPath = `/run/vc/vm/${sb}`;
  if (s.handler === 'kata-remote')
    // The VM is the cloud's: the shim asks the adaptor for it; no QEMU and no virtiofsd run on the node.
    return phase === 'start' ? [kata('calling remote hypervisor StartVM (timeout: 600)', {}, null)] : [];
  if (phase === 'start')
    return [
      kata('created vm path', { 'vm path': vmPath }),
      virtiofsd('Waiting for vhost-user socket connection...'),
      kata(`Start logging QEMU (qemuPid=${p.qemu})`),
      virtiofsd('Client connected, servicing requests'),
      kata('QMP details', {
        'qmp-Capabilities': 'oob',
        'qmp-major-version': 9,
        'qmp-micro-version': 0,
        'qmp-minor-version': 1,
      }),
    ];
  // The shim kills QEMU, whose output then ends.
  return [
    kata('Stopping Sandbox'),
    virtiofsd('Client disconnected, shutting down'),
    kata(`Stop logging QEMU (qemuPid=${p.qemu})`),
    kata('Cleanup vm path', { dir: vmPath, link: vmPath }),
  ];
}

/** The lines of RunPodSandbox for a kata pod: the runtime's request, the shim starting the VM, the runtime's answer. */
export function sandboxStarted(s: Sandbox, at: Date): Line[] {
  const sb = sandboxId(s.uid);
  const runtime = (message: string): Line => ({ unit: s.runtime, ident: s.runtime, pid: s.runtimePid, message });
  if (s.runtime === 'crio') {
    const fields = `id=${requestId(sb, 'run')} name=/runtime.v1.RuntimeService/RunPodSandbox`;
    return [
      runtime(logrus(at, 'info', `Running pod sandbox: ${s.namespace}/${s.name}/POD`, fields)),
      ...kataLines(s, sb, at, 'start'),
      runtime(logrus(at, 'info', `Ran pod sandbox ${sb} with infra container: ${s.namespace}/${s.name}/POD`, fields)),
    ];
  }
  const meta = `&PodSandboxMetadata{Name:${s.name},Uid:${s.uid},Namespace:${s.namespace},Attempt:0,}`;
  return [
    runtime(logrus(at, 'info', `RunPodSandbox for ${meta}`)),
    ...kataLines(s, sb, at, 'start'),
    runtime(logrus(at, 'info', `RunPodSandbox for ${meta} returns sandbox id "${sb}"`)),
  ];
}

/** The lines of StopPodSandbox for a kata pod: the VM stopped (QEMU killed, its logging ended), the paths cleaned. */
export function sandboxStopped(s: Sandbox, at: Date): Line[] {
  const sb = sandboxId(s.uid);
  const runtime = (message: string): Line => ({ unit: s.runtime, ident: s.runtime, pid: s.runtimePid, message });
  if (s.runtime === 'crio') {
    const fields = `id=${requestId(sb, 'stop')} name=/runtime.v1.RuntimeService/StopPodSandbox`;
    return [
      runtime(logrus(at, 'info', `Stopping pod sandbox: ${sb}`, fields)),
      ...kataLines(s, sb, at, 'stop'),
      runtime(logrus(at, 'info', `Stopped pod sandbox: ${sb}`, fields)),
    ];
  }
  return [
    runtime(logrus(at, 'info', `StopPodSandbox for "${sb}"`)),
    ...kataLines(s, sb, at, 'stop'),
    runtime(logrus(at, 'info', `TearDown network for sandbox "${sb}" successfully`)),
    runtime(logrus(at, 'info', `StopPodSandbox for "${sb}" returns successfully`)),
  ];
}

/** CRI-O's first line (the version the dev cluster's nodes report). */
export const crioStarting = (at: Date) => logrus(at, 'info', 'Starting CRI-O, version: 1.34.1, git: unknown');

/**
 * `systemctl restart` of the container runtime: systemd stops the old process and starts a new one (on a
 * kubeadm node's Ubuntu, systemd names the unit and its description; RHCOS's names the description).
 */
export function runtimeRestarted(runtime: RuntimeUnit, oldPid: number, newPid: number, at: Date): Line[] {
  const systemd = (message: string): Line => ({ unit: runtime, ident: 'systemd', pid: 1, message });
  const own = (pid: number, message: string): Line => ({ unit: runtime, ident: runtime, pid, message });
  if (runtime === 'containerd') {
    const unit = 'containerd.service - containerd container runtime';
    return [
      systemd(`Stopping ${unit}...`),
      own(oldPid, logrus(at, 'info', 'Stop CRI service')),
      systemd('containerd.service: Deactivated successfully.'),
      systemd(`Stopped ${unit}.`),
      systemd(`Starting ${unit}...`),
      own(newPid, logrus(at, 'info', 'containerd successfully booted in 0.052714s')),
      systemd(`Started ${unit}.`),
    ];
  }
  const unit = 'Container Runtime Interface for OCI (CRI-O)';
  return [
    systemd(`Stopping ${unit}...`),
    systemd('crio.service: Deactivated successfully.'),
    systemd(`Stopped ${unit}.`),
    systemd(`Starting ${unit}...`),
    own(newPid, crioStarting(at)),
    systemd(`Started ${unit}.`),
  ];
}
