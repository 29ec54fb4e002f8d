import { stringify } from 'yaml';
import { renderConfidential } from '../../api/confidential-summary.ts';
import { eventNotes } from '../../api/events.ts';
import { type KataConfig, KataConfigs } from '../../api/kataconfig.ts';
import { objectName } from '../../api/meta.ts';
import { renderNone, renderStatus, type StatusSummary, summarize } from '../../api/summary.ts';
import { type Node, Nodes } from '../../kube/resources.ts';
import { Informer } from '../../runtime/informer.ts';
import { type CliIO, type ClusterFlags, connect, displayPath, loadCluster, onShutdownSignal, SAMPLE_KATACONFIG, write } from '../common.ts';
import { readConfidential } from './confidential-status.ts';

export type OutputFormat = 'text' | 'json' | 'yaml';

export interface StatusFlags extends ClusterFlags {
  watch?: boolean;
  output: OutputFormat;
}

const UNINSTALL_STATES = new Set(['uninstalling', 'waiting to uninstall', 'failed to uninstall']);

export function format(summaries: StatusSummary[], output: OutputFormat, watching: boolean, uninstallTotal = 0): string {
  if (output === 'json') {
    const value = watching ? summaries[0] : { kataConfigs: summaries };
    return `${JSON.stringify(value, null, watching ? undefined : 2)}\n`;
  }
  if (output === 'yaml') return stringify(watching ? summaries[0] : { kataConfigs: summaries }, { lineWidth: 0 });
  if (summaries.length === 0) return renderNone(watching, displayPath(SAMPLE_KATACONFIG));
  return summaries.map((s) => renderStatus(s, { uninstallTotal })).join('\n');
}

/** `osc status`: the KataConfig at a glance; with --watch, live until the rollout settles or the KataConfig is gone. */
export async function status(flags: StatusFlags, io: CliIO): Promise<number> {
  const client = await connect(await loadCluster(flags));
  try {
    if (!flags.watch) {
      const items = (await client.list(KataConfigs)).items.sort((a, b) => objectName(a).localeCompare(objectName(b)));
      const nodes = items.length ? (await client.list(Nodes)).items : [];
      const summaries = items.map((kc) => summarize(kc, nodes));
      // What a user may not read (the operator's ConfigMap, every pod) leaves the section out, not the status.
      const confidential = items.length ? await readConfidential(client, nodes).catch(() => undefined) : undefined;
      if (flags.output === 'text' || !confidential) {
        io.stdout.write(format(summaries, flags.output, false));
        if (confidential && flags.output === 'text') io.stdout.write(`\n${renderConfidential(confidential)}`);
      } else {
        const value = { kataConfigs: summaries, confidential };
        io.stdout.write(flags.output === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value, { lineWidth: 0 }));
      }
      return 0;
    }
    return await watch(flags, io, new Informer<KataConfig>(client, KataConfigs, {}), new Informer<Node>(client, Nodes, {}));
  } finally {
    await client.close();
  }
}

export const WATCHING_HINT = '(watching; Ctrl-C to stop)';

/**
 * Where --watch renders: on a terminal, each state replaces the screen with a hint below it that the watch
 * goes on, and the hint is erased when the watch ends (it would otherwise stay, stale, under the final
 * state); elsewhere, each state is appended (YAML documents separated by ---).
 */
export function watchScreen(out: CliIO['stdout'], output: OutputFormat): { show(text: string): void; close(): void } {
  const tty = output === 'text' && !!out.isTTY;
  let last = '';
  let blocks = 0;
  return {
    show: (text) => {
      if (text === last) return;
      last = text;
      if (tty) out.write(`\x1b[H\x1b[2J${text}\n${WATCHING_HINT}\n`);
      else if (output === 'yaml') out.write(`${blocks ? '---\n' : ''}${text}`);
      else out.write(`${blocks && output === 'text' ? '\n' : ''}${text}`);
      blocks++;
    },
    close: () => {
      // Up one line (the hint) and erase it.
      if (tty && blocks) out.write('\x1b[1A\x1b[2K');
    },
  };
}

/**
 * Renders on every change the watch delivers (no polling). Exits 0 once the KataConfig is installed and
 * idle (InProgress False without a reason), or once it is gone after a delete; 130 on Ctrl-C.
 */
async function watch(flags: StatusFlags, io: CliIO, informer: Informer<KataConfig>, nodes: Informer<Node>): Promise<number> {
  const ac = new AbortController();
  const screen = watchScreen(io.stdout, flags.output);
  const emit = screen.show;
  let uninstallTotal = 0;

  return new Promise<number>((resolve) => {
    let done = false;
    const finish = (code: number) => {
      if (done) return;
      done = true;
      screen.close();
      signals.dispose();
      ac.abort();
      resolve(code);
    };
    const signals = onShutdownSignal(() => finish(130));
    let current: KataConfig | undefined;
    const show = (kc: KataConfig) => {
      if (done) return;
      current = kc;
      const s = summarize(kc, nodes.list());
      const left = s.nodes.filter((n) => UNINSTALL_STATES.has(n.state)).length;
      uninstallTotal = Math.max(uninstallTotal, left);
      emit(format([s], flags.output, true, uninstallTotal));
      if (s.settled) finish(0);
    };
    informer.addEventHandler({
      add: show,
      update: (_, kc) => show(kc),
      delete: (kc) => {
        if (done) return;
        if (flags.output === 'text') {
          emit(`KataConfig ${kc.metadata.name}: deleted — ${eventNotes.uninstalled(summarize(kc).runtimeClass)}\n`);
        } else {
          emit(format([{ ...summarize(kc), phase: 'Deleted' }], flags.output, true));
        }
        finish(0);
      },
    });
    // A node that becomes unreachable (or comes back) changes what the status says about it.
    const reshow = () => {
      if (current && nodes.hasSynced) show(current);
    };
    nodes.addEventHandler({ add: reshow, update: reshow, delete: reshow });
    void nodes.run(ac.signal).catch(() => undefined);
    informer.run(ac.signal).catch(() => finish(1));
    void informer.waitForSync(ac.signal).then((synced) => {
      if (synced && !done && informer.list().length === 0 && flags.output === 'text')
        write(io.stdout, renderNone(true, displayPath(SAMPLE_KATACONFIG)).trimEnd());
    });
  });
}
