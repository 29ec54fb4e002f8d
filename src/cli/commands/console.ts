import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import type { ConsoleOptions, LocalOperator, RunningConsole } from '../../console/server.ts';
import type { DevPrometheus as DevPrometheusType } from '../../devcluster/prometheus.ts';
import { packageVersion } from '../../install/manifests.ts';
import type { KubeClient } from '../../kube/client.ts';
import { errorMessage } from '../../kube/errors.ts';
import { CliError, type CliIO, type ClusterFlags, connect, loadKubeConfig, onShutdownSignal, write } from '../common.ts';

export interface ConsoleFlags extends ClusterFlags {
  address: string;
  prometheusUrl?: string;
}

/** The console's server, loaded only here: the operator's process never imports the console. */
export async function openConsole(opts: {
  kubeConfig: KubeConfig;
  address?: string;
  prometheus?: ConsoleOptions['prometheus'];
  localOperator?: LocalOperator;
  log?: Logger;
}): Promise<RunningConsole> {
  const { startConsole } = await import('../../console/server.ts');
  const [host, port] = splitAddress(opts.address ?? '127.0.0.1:0');
  return startConsole({
    kubeConfig: opts.kubeConfig,
    host,
    port,
    prometheus: opts.prometheus,
    version: packageVersion(),
    localOperator: opts.localOperator,
    log: opts.log,
  });
}

function splitAddress(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  if (i < 0) return ['127.0.0.1', Number(addr)];
  const host = addr.slice(0, i).replace(/^\[|\]$/g, '') || '127.0.0.1';
  return [host, Number(addr.slice(i + 1))];
}

/** `osc console`: the web console for the cluster in the kubeconfig, acting as its user, until Ctrl-C. */
export async function runConsole(flags: ConsoleFlags, io: CliIO): Promise<number> {
  const kubeConfig = await loadKubeConfig(flags);
  // Fail early with the usual messages (unreachable, refused credentials); the KataConfig API may come later.
  const client = await connect(kubeConfig, { requireKataConfigAPI: false });
  await client.close();
  let console_: RunningConsole;
  try {
    console_ = await openConsole({ kubeConfig, address: flags.address, prometheus: flags.prometheusUrl });
  } catch (e) {
    throw new CliError(`cannot start the console on ${flags.address}: ${errorMessage(e)}`);
  }
  const [host] = splitAddress(flags.address);
  write(
    io.stdout,
    [
      `osc console for ${kubeConfig.getCurrentCluster()?.server} (context ${kubeConfig.getCurrentContext()}, as its user).`,
      '',
      `  Open: ${console_.url}`,
      '',
      'The link carries a token for this run only: keep it to yourself.',
      ...(host !== '127.0.0.1' && host !== 'localhost' && host !== '::1'
        ? [`warning: listening on ${host}: anyone who can reach it and learns the token acts as your kubeconfig user.`]
        : []),
      flags.prometheusUrl ? `Metrics from Prometheus at ${flags.prometheusUrl}.` : 'No --prometheus-url: the metrics page is off.',
      'Press Ctrl-C to stop.',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    const signals = onShutdownSignal(() => {
      signals.dispose();
      resolve();
    });
  });
  await console_.close();
  return 0;
}

/**
 * For `osc start`: the console at once, and a Prometheus server scraping the in-process operator (data
 * under the dev home) as soon as it is up. Prometheus is built on first use, like the control plane, which
 * takes minutes: the console does not wait for it, its metrics page says it is on its way.
 */
export async function startDevConsole(opts: {
  kubeConfig: KubeConfig;
  home: string;
  metricsAddress: string | undefined;
  /** The CA of the operator's metrics certificate: Prometheus scrapes over HTTPS, with a token of its own. */
  metricsCA?: string;
  operator: LocalOperator;
  log: Logger;
  onWarning: (message: string) => void;
}): Promise<{ url: string; metricsReady: Promise<void>; stop(): Promise<void> }> {
  const { DevPrometheus, metricsScraperToken } = await import('../../devcluster/prometheus.ts');
  const { join } = await import('node:path');
  let prometheus: DevPrometheusType | undefined;
  let note = opts.metricsAddress ? 'Prometheus is starting' : 'the operator serves no metrics';
  const starting = opts.metricsAddress
    ? scrapeCredentials(opts.kubeConfig, opts.metricsCA, metricsScraperToken)
        .then((https) =>
          DevPrometheus.start({
            targets: [opts.metricsAddress ?? ''],
            https,
            dataDir: join(opts.home, 'prometheus'),
            logFile: join(opts.home, 'logs', 'prometheus.log'),
            log: opts.log,
          }),
        )
        .then(
          (p) => {
            prometheus = p;
          },
          (e) => {
            note = `Prometheus did not start: ${errorMessage(e)}`;
            opts.onWarning(`${note}; the console has no metrics`);
          },
        )
    : Promise.resolve();
  const c = await openConsole({
    kubeConfig: opts.kubeConfig,
    prometheus: () => (prometheus ? { url: prometheus.url } : { note }),
    localOperator: opts.operator,
    log: opts.log,
  });
  return {
    url: c.url,
    // Settles once Prometheus serves, or failed to start (then the warning has been given).
    metricsReady: starting,
    stop: async () => {
      await c.close();
      await starting;
      await prometheus?.stop();
    },
  };
}

/** A token for the dev Prometheus's ServiceAccount, when the operator's metrics are served over HTTPS. */
async function scrapeCredentials(
  kubeConfig: KubeConfig,
  caPem: string | undefined,
  tokenFor: (client: KubeClient, namespace: string) => Promise<string>,
): Promise<{ caPem: string; token: string } | undefined> {
  if (!caPem) return undefined;
  const { KubeClient } = await import('../../kube/client.ts');
  const client = new KubeClient(kubeConfig);
  try {
    return { caPem, token: await tokenFor(client, OPERATOR_NAMESPACE) };
  } finally {
    await client.close();
  }
}
