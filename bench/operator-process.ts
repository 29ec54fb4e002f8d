/**
 * The operator in a process of its own, for the benchmark: its memory and API traffic are then its own.
 * Reports over IPC when asked: peak RSS (getrusage maxRSS), API requests by verb, status writes.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { createOperator } from '../src/operator.ts';
import { silentLogger } from '../src/runtime/log.ts';
import { RuntimeMetrics } from '../src/runtime/metrics.ts';

// Loading the modules (mostly @kubernetes/client-node, which loads every generated API) is a fixed cost.
const importRSSKiB = process.resourceUsage().maxRSS;
const kubeconfig = process.argv[2];
if (!kubeconfig || !process.send) throw new Error('usage: forked with a kubeconfig path');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const metrics = new RuntimeMetrics();
const op = await createOperator({
  kubeConfig: kc,
  log: silentLogger(),
  leaderElection: false,
  metricsAddress: '',
  healthAddress: '',
  webhook: { address: '127.0.0.1:0', url: 'https://127.0.0.1:{port}' },
  metrics,
});
const ac = new AbortController();
const run = op.run(ac.signal);

process.on('message', async (msg: { cmd: string }) => {
  if (msg.cmd === 'report') {
    const requests: Record<string, number> = {};
    for (const v of (await metrics.restRequests.get()).values) {
      const verb = String(v.labels.verb);
      requests[verb] = (requests[verb] ?? 0) + v.value;
    }
    const writes = (await metrics.statusWrites.get()).values.find((v) => v.labels.result === 'written')?.value ?? 0;
    const reconciles = (await metrics.reconcileTotal.get()).values.reduce((a, v) => a + v.value, 0);
    const reconcileErrors = (await metrics.reconcileErrors.get()).values.reduce((a, v) => a + v.value, 0);
    const statusConflicts = (await metrics.statusWrites.get()).values.find((v) => v.labels.result === 'error')?.value ?? 0;
    process.send?.({
      importRSSKiB,
      maxRSSKiB: process.resourceUsage().maxRSS,
      rssNowKiB: Math.round(process.memoryUsage().rss / 1024),
      requests,
      statusWrites: writes,
      reconciles,
      reconcileErrors,
      statusConflicts,
    });
  } else if (msg.cmd === 'stop') {
    ac.abort();
    await run;
    process.exit(0);
  }
});
process.send({ ready: true });
