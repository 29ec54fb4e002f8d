import { readFile } from 'node:fs/promises';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import { errorMessage } from '../../kube/errors.ts';
import { createOperator } from '../../operator.ts';
import type { PlatformName } from '../../platform/platform.ts';
import { type LeaseTimings, leaseTimingsProblem } from '../../runtime/leasetimings.ts';
import { createLogger } from '../../runtime/log.ts';
import type { CertSourceFlag } from '../../webhooks/certsource.ts';
import { CliError, type CliIO, type ClusterFlags, connect, loadCluster, onShutdownSignal } from '../common.ts';

export interface RunFlags extends ClusterFlags {
  namespace?: string;
  leaderElect: boolean;
  metricsBindAddress: string;
  metricsSecure: boolean;
  metricsCertDir?: string;
  healthProbeBindAddress: string;
  webhookBindAddress: string;
  webhookUrl?: string;
  webhooks: boolean;
  webhookCertSource?: CertSourceFlag;
  /** Hours. */
  webhookCertValidity?: number;
  logLevel: string;
  distribution?: PlatformName;
  /** Milliseconds (parsed from --katanode-soak). */
  katanodeSoak: number;
  /** The kubernetes platform's installer (docs/kubernetes.md). */
  kataDeployImage?: string;
  /** Milliseconds (parsed from --install-deadline). */
  installDeadline?: number;
  maxUnavailable?: number;
  /** Peer pods: where the cloud API clients send their requests (testing, air-gapped endpoints). */
  cloudApiEndpoint?: string;
  cloudApiCaFile?: string;
  /** Where the operator's projected ServiceAccount token is (a workload identity for the leaked pod VM collector). */
  cloudTokenFile?: string;
  /** --ensure-sccs: keep osc's SCCs (the OLM form). */
  ensureSccs?: boolean;
  /** Milliseconds (--leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period). */
  leaderElectLeaseDuration: number;
  leaderElectRenewDeadline: number;
  leaderElectRetryPeriod: number;
}

/** The lease timings the flags give, or a CliError naming the flag to fix. */
export function leaseTimings(
  flags: Pick<RunFlags, 'leaderElectLeaseDuration' | 'leaderElectRenewDeadline' | 'leaderElectRetryPeriod'>,
): LeaseTimings {
  const timings: LeaseTimings = {
    leaseDurationMs: flags.leaderElectLeaseDuration,
    renewDeadlineMs: flags.leaderElectRenewDeadline,
    retryPeriodMs: flags.leaderElectRetryPeriod,
  };
  const problem = leaseTimingsProblem(timings);
  if (problem) throw new CliError(problem);
  return timings;
}

/** The cloud API endpoint override, from the flags or the environment; the CA file read. */
export async function cloudEndpoint(flags: RunFlags, env = process.env): Promise<{ url?: string; ca?: string }> {
  const url = flags.cloudApiEndpoint || env.OSC_CLOUD_API_ENDPOINT || undefined;
  const caFile = flags.cloudApiCaFile || env.OSC_CLOUD_API_CA_FILE || undefined;
  if (url && !url.startsWith('https://')) throw new CliError(`--cloud-api-endpoint ${url}: the cloud API endpoint must be an https:// URL`);
  let ca: string | undefined;
  if (caFile) {
    try {
      ca = await readFile(caFile, 'utf8');
    } catch (e) {
      throw new CliError(`--cloud-api-ca-file ${caFile}: ${errorMessage(e)}`);
    }
  }
  return { ...(url ? { url } : {}), ...(ca ? { ca } : {}) };
}

/** `osc run`: the operator itself, until SIGTERM/SIGINT; JSON logs on stdout. */
export async function runOperator(flags: RunFlags, io: CliIO): Promise<number> {
  const timings = leaseTimings(flags);
  const cluster = await loadCluster(flags);
  // Fail fast, with a message a human can act on, rather than retrying in the logs forever.
  const probe = await connect(cluster, { requireKataConfigAPI: true });
  const server = probe.server;
  await probe.close();

  const namespace = flags.namespace || process.env.POD_NAMESPACE || OPERATOR_NAMESPACE;
  const endpoint = await cloudEndpoint(flags);
  const log = createLogger({ level: flags.logLevel, destination: io.stdout });
  const ac = new AbortController();
  const signals = onShutdownSignal((sig) => {
    log.info({ signal: sig }, 'shutting down');
    ac.abort();
  });
  try {
    const operator = await createOperator({
      kubeConfig: cluster,
      log,
      namespace,
      leaderElection: flags.leaderElect,
      leaseTimings: timings,
      ...(flags.ensureSccs ? { ensureSCCs: true } : {}),
      metricsAddress: flags.metricsBindAddress === '0' ? '' : flags.metricsBindAddress,
      metricsSecure: flags.metricsSecure,
      metricsCertDir: flags.metricsCertDir,
      healthAddress: flags.healthProbeBindAddress === '0' ? '' : flags.healthProbeBindAddress,
      ...(flags.distribution ? { platform: flags.distribution } : {}),
      kataConfig: { soakMs: flags.katanodeSoak },
      platformOptions: {
        settings: {
          kubernetes: {
            ...(flags.kataDeployImage ? { image: flags.kataDeployImage } : {}),
            ...(flags.installDeadline ? { installDeadlineMs: flags.installDeadline } : {}),
            ...(flags.maxUnavailable ? { maxUnavailable: flags.maxUnavailable } : {}),
          },
        },
      },
      // Leaked pod VMs: the cloud peer-pods-cm names, through its API, with the credentials the collector chooses (docs/cloud-credentials.md).
      leakedVMs: {
        ...(endpoint.url ? { endpoint } : {}),
        ...(flags.cloudTokenFile || process.env.OSC_CLOUD_TOKEN_FILE
          ? { tokenFile: flags.cloudTokenFile || process.env.OSC_CLOUD_TOKEN_FILE }
          : {}),
      },
      webhook: flags.webhooks
        ? {
            address: flags.webhookBindAddress,
            ...(flags.webhookUrl ? { url: flags.webhookUrl } : {}),
            certSource: flags.webhookCertSource ?? 'auto',
            ...(flags.webhookCertValidity ? { certLifetimeMs: flags.webhookCertValidity * 3_600_000 } : {}),
          }
        : false,
    });
    log.info(
      {
        namespace,
        server,
        leaderElection: flags.leaderElect,
        platform: operator.platform.name,
        webhookPort: operator.webhookPort,
        webhookRegistration: !flags.webhooks ? 'disabled' : flags.webhookUrl ? 'url' : 'service',
      },
      'operator starting',
    );
    await operator.run(ac.signal);
    log.info('operator stopped');
    return 0;
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`the operator failed: ${errorMessage(e)}`);
  } finally {
    signals.dispose();
  }
}
