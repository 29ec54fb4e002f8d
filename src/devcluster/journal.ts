/**
 * The simulated nodes' journals. A real node's systemd journal is where support looks first (CRI-O, the
 * kubelet, kata's and QEMU's own lines); a kwok node has none, so the simulators that play a node's host side
 * (the machine-config daemon's reboot, the kubelet coming back) write the lines the real services would,
 * and the node-log pod player (controlplane/nodelogs-player.ts) answers must-gather's `journalctl` pods
 * with them. One file per node, one JSON entry per line, so that concurrent writers never interleave.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One journal entry: what `journalctl` selects on (`-u` unit, `-t` identifier) and prints. */
export interface JournalEntry {
  /** Epoch milliseconds. */
  at: number;
  /** The systemd unit the entry belongs to (`-u`), when it has one. */
  unit?: string;
  /** The syslog identifier (`-t`), printed before the pid. */
  ident: string;
  pid: number;
  message: string;
}

/** The process ids the simulated services run as, stable per service as on a booted host. */
const PIDS: Record<string, number> = { systemd: 1, crio: 2231, kubenswrapper: 2467, kata: 31022, 'qemu-kvm': 31040 };

export class NodeJournal {
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  private file(node: string): string {
    return join(this.dir, `${node}.journal`);
  }

  /** Appends one entry to a node's journal. Synchronous: an entry is on disk before whatever it describes is reported. */
  write(node: string, entry: Omit<JournalEntry, 'at' | 'pid'> & { at?: number; pid?: number }): void {
    const full: JournalEntry = { at: entry.at ?? Date.now(), pid: entry.pid ?? PIDS[entry.ident] ?? 1000, ...entry } as JournalEntry;
    appendFileSync(this.file(node), `${JSON.stringify(full)}\n`);
  }

  /** The lines a reboot leaves in the crio and kubelet units: the services stop, the host boots, they start. */
  reboot(node: string, phase: 'down' | 'up', at = Date.now()): void {
    const systemd = (unit: string, message: string) => this.write(node, { at, unit, ident: 'systemd', message });
    if (phase === 'down') {
      systemd('kubelet', 'Stopping Kubernetes Kubelet...');
      systemd('kubelet', 'kubelet.service: Deactivated successfully.');
      systemd('kubelet', 'Stopped Kubernetes Kubelet.');
      systemd('crio', 'Stopping Container Runtime Interface for OCI (CRI-O)...');
      systemd('crio', 'Stopped Container Runtime Interface for OCI (CRI-O).');
      return;
    }
    systemd('crio', 'Starting Container Runtime Interface for OCI (CRI-O)...');
    this.write(node, { at, unit: 'crio', ident: 'crio', message: 'Starting CRI-O, version: 1.33.5, git: unknown' });
    systemd('crio', 'Started Container Runtime Interface for OCI (CRI-O).');
    systemd('kubelet', 'Starting Kubernetes Kubelet...');
    this.write(node, { at, unit: 'kubelet', ident: 'kubenswrapper', message: `Successfully registered node ${node}` });
    systemd('kubelet', 'Started Kubernetes Kubelet.');
  }

  entries(node: string): JournalEntry[] {
    let text = '';
    try {
      text = readFileSync(this.file(node), 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as JournalEntry);
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/** An entry as `journalctl` prints it by default (short format, UTC here): `Nov 25 16:07:13 worker-0 crio[2231]: ...`. */
export function shortFormat(node: string, e: JournalEntry): string {
  const d = new Date(e.at);
  const stamp = `${MONTHS[d.getUTCMonth()]} ${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`;
  return `${stamp} ${node} ${e.ident}[${e.pid}]: ${e.message}`;
}

/**
 * What must-gather's node-log script prints on this node: for each journal it asks for, the `===` header it
 * echoes and the last day's entries (`-- No entries --` when there are none, as journalctl says).
 */
export function gatherOutput(
  node: string,
  entries: readonly JournalEntry[],
  journals: { units: readonly string[]; identifiers: readonly string[] },
  now = Date.now(),
): string[] {
  const recent = entries.filter((e) => e.at >= now - 86_400_000);
  const section = (header: string, picked: JournalEntry[]) => [
    `=== journalctl ${header}`,
    ...(picked.length ? picked.map((e) => shortFormat(node, e)) : ['-- No entries --']),
  ];
  return [
    ...journals.units.flatMap((u) =>
      section(
        `-u ${u}`,
        recent.filter((e) => e.unit === u),
      ),
    ),
    ...journals.identifiers.flatMap((t) =>
      section(
        `-t ${t}`,
        recent.filter((e) => e.ident === t),
      ),
    ),
  ];
}
