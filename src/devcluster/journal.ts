/**
 * The simulated nodes' journals. A real node's systemd journal is where support looks first (CRI-O, the
 * kubelet, kata's and QEMU's own lines); a kwok node has none, so the simulators that play a node's host side
 * (the machine-config daemon's reboot, kata-deploy's runtime restart, the runtime and kata shim starting and
 * stopping kata pod sandboxes: sandboxes.ts) write the lines the real services would (journal-lines.ts),
 * and the node-log pod player (controlplane/nodelogs-player.ts) answers must-gather's `journalctl` pods
 * with them. One file per node, one JSON entry per line, so that concurrent writers never interleave.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crioStarting, type Line, type RuntimeUnit, runtimeRestarted } from './journal-lines.ts';

/** One journal entry: what `journalctl` selects on (`-u` unit, `-t` identifier) and prints. */
export interface JournalEntry extends Line {
  /** Epoch milliseconds. */
  at: number;
}

/** The process ids the simulated services run as after a boot, stable per service as on a booted host. */
const PIDS: Record<string, number> = { systemd: 1, crio: 2231, containerd: 812, kubenswrapper: 2467 };

export class NodeJournal {
  readonly dir: string;
  /** Per node, the services restarted since the node booted, with their new pids. */
  private readonly restarted = new Map<string, Map<string, number>>();
  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  private file(node: string): string {
    return join(this.dir, `${node}.journal`);
  }

  /** Appends one entry to a node's journal. Synchronous: an entry is on disk before whatever it describes is reported. */
  write(node: string, entry: Omit<JournalEntry, 'at' | 'pid'> & { at?: number; pid?: number }): void {
    const full = { ...entry, at: entry.at ?? Date.now(), pid: entry.pid ?? this.pidOf(node, entry.ident) } as JournalEntry;
    appendFileSync(this.file(node), `${JSON.stringify(full)}\n`);
  }

  /** The pid a service of the node runs as now. */
  pidOf(node: string, ident: string): number {
    return this.restarted.get(node)?.get(ident) ?? PIDS[ident] ?? 1000;
  }

  /** Appends a group of lines, all stamped with one instant. */
  writeLines(node: string, lines: readonly Line[], at = Date.now()): void {
    if (lines.length) appendFileSync(this.file(node), lines.map((l) => `${JSON.stringify({ ...l, at })}\n`).join(''));
  }

  /** `systemctl restart` of the node's container runtime: its lines, and a new pid for what it logs next. */
  restartRuntime(node: string, runtime: RuntimeUnit, at = Date.now()): void {
    const old = this.pidOf(node, runtime);
    const pids = this.restarted.get(node) ?? new Map<string, number>();
    pids.set(runtime, old + 4_096);
    this.restarted.set(node, pids);
    this.writeLines(node, runtimeRestarted(runtime, old, this.pidOf(node, runtime), new Date(at)), at);
  }

  /** Whether any line of the node's journal contains the text (e.g. a sandbox's id). */
  mentions(node: string, text: string): boolean {
    try {
      return readFileSync(this.file(node), 'utf8').includes(text);
    } catch {
      return false;
    }
  }

  /** The lines a reboot leaves in the crio and kubelet units: the services stop, the host boots, they start. */
  reboot(node: string, phase: 'down' | 'up', at = Date.now()): void {
    const systemd = (unit: string, message: string) => this.write(node, { at, unit, ident: 'systemd', message });
    // Every service starts afresh with the host.
    this.restarted.delete(node);
    if (phase === 'down') {
      systemd('kubelet', 'Stopping Kubernetes Kubelet...');
      systemd('kubelet', 'kubelet.service: Deactivated successfully.');
      systemd('kubelet', 'Stopped Kubernetes Kubelet.');
      systemd('crio', 'Stopping Container Runtime Interface for OCI (CRI-O)...');
      systemd('crio', 'Stopped Container Runtime Interface for OCI (CRI-O).');
      return;
    }
    systemd('crio', 'Starting Container Runtime Interface for OCI (CRI-O)...');
    this.write(node, { at, unit: 'crio', ident: 'crio', message: crioStarting(new Date(at)) });
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

/** Splits a shell command into words, honouring single and double quotes (no expansion). */
function words(command: string): string[] {
  const out: string[] = [];
  for (const m of command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

/**
 * What `journalctl` prints for the options it understands here (`-u`, `-t`, `-g`, `--since=-Nd`, `--no-pager`):
 * units OR-ed, identifiers OR-ed, both AND-ed, then the pattern on the message (case-insensitive when it has
 * no capital letter, as journalctl's smart case does); `-- No entries --` when nothing matches.
 */
function journalctl(node: string, entries: readonly JournalEntry[], args: string[], now: number): string[] {
  const units: string[] = [];
  const idents: string[] = [];
  let grep: RegExp | undefined;
  let since = 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (a === '-u') units.push((args[++i] ?? '').replace(/\.service$/, ''));
    else if (a === '-t') idents.push(args[++i] ?? '');
    else if (a === '-g') {
      const pattern = args[++i] ?? '';
      grep = new RegExp(pattern, /[A-Z]/.test(pattern) ? '' : 'i');
    } else if (a.startsWith('--since=-') && a.endsWith('d')) since = now - Number(a.slice(9, -1)) * 86_400_000;
    else if (a !== '--no-pager') return [`journalctl: unrecognized option '${a}'`];
  }
  const picked = entries.filter(
    (e) =>
      e.at >= since &&
      (!units.length || (e.unit !== undefined && units.includes(e.unit))) &&
      (!idents.length || idents.includes(e.ident)) &&
      (!grep || grep.test(e.message)),
  );
  return picked.length ? picked.map((e) => shortFormat(node, e)) : ['-- No entries --'];
}

/**
 * What a node-log pod's script prints on this node: the script is a list of `;`-separated commands, each an
 * `echo "..."` or a `journalctl ...` (with an `|| echo` fallback that a journal read here never needs).
 */
export function runJournalScript(script: string, node: string, entries: readonly JournalEntry[], now = Date.now()): string[] {
  return script.split('; ').flatMap((command) => {
    const [cmd, ...args] = words(command.split(' || ')[0] ?? '');
    if (cmd === 'echo') return [args.join(' ')];
    if (cmd === 'journalctl') return journalctl(node, entries, args, now);
    return [`sh: ${cmd}: command not found`];
  });
}
