import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_SOAK_MS } from '../api/katanode.ts';
import { OPERATOR_NAMESPACE } from '../api/names.ts';
import { packageVersion } from '../install/manifests.ts';
import { DEFAULT_PLATFORM, platformDescriptors, platformNames } from '../platform/index.ts';
import { defaultLeaderElection } from '../runtime/leasetimings.ts';
import {
  type CliIO,
  DEV_CLOUDS,
  loadDevClusterCommand,
  parseAddress,
  parseDuration,
  parseImage,
  parseNamespace,
  parseNonNegativeInt,
  parsePositiveInt,
  parseUrl,
} from './common.ts';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** How long a dev-cluster node "reboots", the same for osc start and osc dev (docs/devcluster.md). */
export const DEFAULT_REBOOT_MS = 4000;

const examples = (lines: string[]) => `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`;

const clusterOptions = (cmd: Command): Command =>
  cmd
    .option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)')
    .option('--context <name>', 'kubeconfig context to use (default: its current context)');

function devOptions(cmd: Command, defaults: { rebootMs: number }): Command {
  return (
    cmd
      .option('--workers <n>', 'worker nodes (default: 2, or 0 with --compact)', parseNonNegativeInt)
      .option('--masters <n>', 'control plane nodes (default: 1, or 3 with --compact)', parsePositiveInt)
      .option('--compact', 'a compact cluster: masters only, and they run workloads (kata goes on the master pool)')
      .option(
        '--reboot-ms <ms>',
        'how long a node is cordoned and NotReady while it "reboots" into a new machine config',
        parseNonNegativeInt,
        defaults.rebootMs,
      )
      .option('--eligible <nodes>', 'nodes Node Feature Discovery finds able to run kata: all, none, or a comma-separated list', 'all')
      .addOption(
        new Option('--cloud <type>', 'the cloud the OpenShift Infrastructure reports (peer pods need AWS, Azure or GCP)')
          .choices(DEV_CLOUDS)
          .default('None'),
      )
      // The old spelling: "platform" is what --distribution chooses now.
      .addOption(new Option('--platform <type>', 'deprecated: --cloud').choices(DEV_CLOUDS).hideHelp())
      .addOption(
        new Option(
          '--distribution <name>',
          "the kind of cluster: openshift (the MCO, NFD and OpenShift's API, simulated) or kubernetes (plain, containerd nodes, kata-deploy's host side simulated)",
        )
          .choices(
            platformDescriptors()
              .filter((p) => p.devCluster)
              .map((p) => p.name),
          )
          .default(DEFAULT_PLATFORM),
      )
      .addOption(
        new Option('--tee <kind>', 'give nodes a Trusted Execution Environment NFD finds (Intel TDX or AMD SEV-SNP)').choices([
          'tdx',
          'snp',
        ]),
      )
      .option('--tee-nodes <nodes>', 'which nodes have the TEE: a comma-separated list (default: every worker)')
      .option('--key-slots <n>', 'TEE key slots per TEE node, advertised as an extended resource; 4 unless given', parsePositiveInt)
      .option('--gpu-nodes <nodes>', 'nodes the NVIDIA GPU operator has labelled for GPUs in kata VMs: a comma-separated list')
      .option('--cluster-version <v>', 'the OpenShift release the ClusterVersion reports (default: 4.21.9)')
      .option('--home <dir>', 'where the kubeconfig and the log are written (default: $OSC_HOME, else ./.osc)')
      .addOption(new Option('--log-level <level>', 'log level of the log file').choices(LOG_LEVELS).default('info'))
  );
}

/** The platforms and how kata reaches the nodes on each, for --help: "openshift (the Machine Config Operator) or …". */
const platformChoices = (): string =>
  platformDescriptors()
    .map((p) => `${p.name} (${p.summary})`)
    .join(' or ');

/**
 * The `osc` command line. Every action answers an exit code through `result`; failures throw CliError
 * (printed by main as `error: ...`). Commands that need the whole module graph load it lazily so that
 * `--help` stays fast.
 */
export function buildProgram(io: CliIO, name = 'osc', result: { code: number } = { code: 0 }): Command {
  const program = new Command(name);
  program
    .description(
      'OpenShift sandboxed containers (osc): runs workloads in Kata Containers VMs on the worker nodes a KataConfig selects.\n' +
        'Install the operator, create one KataConfig, and follow the rollout node by node.',
    )
    .version(packageVersion(), '-v, --version', 'print the osc version')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError(`(run "${name} --help" for usage)`)
    .exitOverride()
    .addHelpText(
      'after',
      examples([
        `${name} start                     # a simulated OpenShift cluster with the operator, on this machine`,
        `${name} install                   # put the operator into the cluster in $KUBECONFIG`,
        `${name} status --watch            # follow a KataConfig rollout`,
        `${name} must-gather               # collect everything support needs into a .tar.gz`,
      ]),
    );

  devOptions(
    program
      .command('start')
      .description(
        'the dev environment in one process: a simulated OpenShift cluster (real kube-apiserver and etcd) and the operator, ' +
          'until Ctrl-C. Prints how to point kubectl at it.',
      ),
    { rebootMs: DEFAULT_REBOOT_MS },
  )
    .option(
      '--metrics-bind-address <addr>',
      "the operator's /metrics address (host:port; port 0 picks a free port)",
      parseAddress,
      '127.0.0.1:0',
    )
    .option('--quiet', 'do not print a line per KataConfig state change')
    .option('--no-console', 'do not start the web console (nor the Prometheus server it queries)')
    .addHelpText(
      'after',
      examples([
        `${name} start`,
        `${name} start --workers 3 --reboot-ms 10000`,
        `${name} start --eligible worker-0   # then: checkNodeEligibility: true`,
        `${name} start --distribution kubernetes --workers 2`,
      ]),
    )
    .action(async (flags) => {
      const { runDevEnvironment } = await loadDevClusterCommand(() => import('./commands/start.ts'));
      result.code = await runDevEnvironment(flags, io, { withOperator: true, programName: name });
    });

  devOptions(
    program
      .command('dev')
      .description('the simulated OpenShift cluster alone (no operator), until Ctrl-C; writes a kubeconfig and prints its path'),
    { rebootMs: DEFAULT_REBOOT_MS },
  )
    .addHelpText(
      'after',
      examples([
        `${name} dev`,
        `${name} dev --compact`,
        `OSC_HOME=/tmp/osc ${name} dev --workers 4 --eligible worker-0,worker-1`,
        `${name} dev --distribution kubernetes`,
      ]),
    )
    .action(async (flags) => {
      const { runDevEnvironment } = await loadDevClusterCommand(() => import('./commands/start.ts'));
      result.code = await runDevEnvironment({ ...flags, metricsBindAddress: '' }, io, { withOperator: false, programName: name });
    });

  clusterOptions(
    program
      .command('run')
      .description('the operator itself: in a pod (in-cluster credentials) or against any cluster with a kubeconfig; JSON logs on stdout'),
  )
    .option(
      '--namespace <ns>',
      `the operator's namespace: lease, webhook certificate, peer pods (default: $POD_NAMESPACE, else ${OPERATOR_NAMESPACE})`,
      parseNamespace,
    )
    .option('--leader-elect', 'reconcile only while holding the leader lease, so replicas can run side by side (default)', true)
    .option('--no-leader-elect', 'reconcile without a lease (a single instance)')
    .addOption(
      new Option(
        '--leader-elect-lease-duration <duration>',
        'how long a standby waits, after it last saw the lease renewed, before it takes the lease',
      )
        .argParser(parseDuration)
        .default(defaultLeaderElection.leaseDurationMs, '137s'),
    )
    .addOption(
      new Option(
        '--leader-elect-renew-deadline <duration>',
        'how long a leader keeps trying to renew its lease before it stops (and exits)',
      )
        .argParser(parseDuration)
        .default(defaultLeaderElection.renewDeadlineMs, '107s'),
    )
    .addOption(
      new Option('--leader-elect-retry-period <duration>', "between a leader's renewals, and a standby's looks at the lease")
        .argParser(parseDuration)
        .default(defaultLeaderElection.retryPeriodMs, '26s'),
    )
    .option('--metrics-bind-address <addr>', '/metrics address (HTTPS unless --no-metrics-secure); 0 disables', parseAddress, ':8443')
    .option(
      '--no-metrics-secure',
      'serve /metrics over plain HTTP without authentication (a loopback address only); by default HTTPS, for clients the API server authenticates and authorises (get on /metrics)',
    )
    .option(
      '--metrics-cert-dir <dir>',
      "a directory with the metrics server's tls.crt and tls.key (re-read when they change); without one osc makes a certificate",
    )
    .option('--health-probe-bind-address <addr>', '/healthz and /readyz address; 0 disables', parseAddress, ':8081')
    .option('--webhook-bind-address <addr>', 'admission webhook server address (TLS)', parseAddress, ':9443')
    .option(
      '--webhook-url <url>',
      'register the webhooks at this URL instead of the in-cluster Service ({port} is replaced by the bound port)',
      parseUrl,
    )
    .option('--no-webhooks', 'neither serve nor register the admission webhooks')
    .addOption(
      new Option(
        '--webhook-cert-source <source>',
        "the webhook's serving certificate: auto (OpenShift's service CA, else cert-manager, else osc's own), or one of them",
      )
        .choices(['auto', 'service-ca', 'cert-manager', 'self-signed'])
        .default('auto'),
    )
    .option(
      '--webhook-cert-validity <hours>',
      "lifetime of osc's own webhook certificates, rotated at two thirds of it (default 168: a week)",
      parsePositiveInt,
    )
    .addOption(
      new Option(
        '--distribution <name>',
        `how kata reaches the nodes: ${platformChoices()}; default: the one that recognises the cluster (openshift where it serves machineconfiguration.openshift.io)`,
      ).choices(platformNames()),
    )
    .addOption(
      new Option(
        '--katanode-soak <duration>',
        "how long a node runs its assigned configuration without error before that becomes its KataNode's lastKnownGood, where osc runs the installer (on OpenShift it is the Machine Config Operator's currentConfig) (e.g. 10m, 30s)",
      )
        .argParser(parseDuration)
        .default(DEFAULT_SOAK_MS, '10m'),
    )
    .option(
      '--kata-deploy-image <image>',
      'kubernetes: the kata-deploy image (default: $RELATED_IMAGE_KATA_DEPLOY, else the pinned release)',
      parseImage,
    )
    .addOption(
      new Option('--install-deadline <duration>', "kubernetes: how long a node's installer has to report before the node is rolled back")
        .argParser(parseDuration)
        .default(600_000, '10m'),
    )
    .option('--max-unavailable <n>', 'kubernetes: nodes installing at once', parsePositiveInt, 1)
    .option(
      '--cloud-api-endpoint <url>',
      "peer pods: send the cloud API calls that find leaked pod VMs to this https URL instead of the cloud's endpoints, paths unchanged (testing, air-gapped mirrors; default $OSC_CLOUD_API_ENDPOINT)",
      parseUrl,
    )
    .option(
      '--cloud-api-ca-file <path>',
      "the PEM CA bundle that endpoint's certificate is checked against (default $OSC_CLOUD_API_CA_FILE, else the system's)",
    )
    .option(
      '--cloud-token-file <path>',
      "peer pods: the operator's projected ServiceAccount token the leaked pod VM collector trades for a workload identity's credentials (default $OSC_CLOUD_TOKEN_FILE, else /var/run/secrets/openshift/serviceaccount/token, where the Deployment mounts it)",
    )
    .option(
      '--ensure-sccs',
      "openshift: create osc's SecurityContextConstraints when missing and keep them as this release defines them (an OLM install, whose bundle cannot carry them)",
    )
    .addOption(new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info'))
    .addHelpText(
      'after',
      examples([
        `${name} run                                   # in a pod: what the Deployment runs`,
        `${name} run --distribution kubernetes          # plain Kubernetes, without asking discovery`,
        `${name} run --kubeconfig ~/.kube/config --no-leader-elect --webhook-url 'https://127.0.0.1:{port}' --webhook-bind-address 127.0.0.1:0`,
      ]),
    )
    .action(async (flags) => {
      const { runOperator } = await import('./commands/run.ts');
      result.code = await runOperator(flags, io);
    });

  clusterOptions(
    program
      .command('install')
      .description(
        `install the operator: namespace ${OPERATOR_NAMESPACE}, CRDs, ServiceAccount, RBAC, Deployment, webhook Service and configurations with certificates`,
      ),
  )
    .addOption(
      new Option(
        '--dry-run [mode]',
        'client (the default): print the manifests instead of applying them (the same ones are committed under config/); ' +
          'server: print what an install would change in the cluster (created, configured with the fields, unchanged, removed), writing nothing',
      )
        .choices(['client', 'server'])
        .preset('client'),
    )
    .option('--output-dir <dir>', 'with --dry-run: write one file per group of manifests into this directory')
    .option('--image <image>', 'the operator image (default: quay.io/osc/osc-operator:v<version>)', parseImage)
    .option('--pin-images', 'the release step: name every image by the digest its registry gives for its tag now')
    .option(
      '--image-digests <file>',
      'pin every image with the digests in this file ("<image> sha256:<digest>" per line) instead of asking the registries',
    )
    .addOption(new Option('--log-level <level>', "the operator's log level").choices(LOG_LEVELS).default('info'))
    .addOption(
      new Option(
        '--distribution <name>',
        `the cluster: ${platformChoices()}; sets the RBAC (default openshift). With --output-dir and no --distribution: the tree of config/, every platform's`,
      ).choices(platformNames()),
    )
    .option(
      '--service-monitor',
      'include the ServiceMonitor (monitoring.coreos.com/v1, the Prometheus Operator); the default on openshift, where that API is always served',
    )
    .option('--no-service-monitor', 'leave the ServiceMonitor out (the default on kubernetes)')
    .addHelpText(
      'after',
      examples([
        `${name} install`,
        `${name} install --distribution kubernetes`,
        `${name} install --dry-run > osc.yaml`,
        `${name} install --dry-run=server          # what an upgrade would change, before making it`,
        `${name} install --dry-run --output-dir config`,
        `${name} install --dry-run --pin-images --image registry.example.com/osc:v1 > release.yaml`,
        `${name} install --image registry.example.com/osc:dev`,
      ]),
    )
    .action(async (flags) => {
      const { install } = await import('./commands/install.ts');
      result.code = await install(flags, io, name);
    });

  clusterOptions(program.command('uninstall').description('remove the operator; refuses while a KataConfig exists (delete it first)'))
    .option('--keep-namespace', `keep namespace ${OPERATOR_NAMESPACE} (and the peer-pods ConfigMap and Secret in it)`)
    .addHelpText('after', examples(['kubectl delete kataconfig cluster-kataconfig   # first: kata leaves the nodes', `${name} uninstall`]))
    .action(async (flags) => {
      const { uninstall } = await import('./commands/install.ts');
      result.code = await uninstall(flags, io);
    });

  clusterOptions(
    program.command('status').description('the KataConfig at a glance: phase, message, progress, per-node state, runtime classes'),
  )
    .option('-w, --watch', 'follow it live until the rollout settles, or the KataConfig is gone after a delete')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json', 'yaml']).default('text'))
    .addHelpText(
      'after',
      examples([`${name} status`, `${name} status --watch`, `${name} status -o yaml`, 'kubectl kata status -w      # as a kubectl plugin']),
    )
    .action(async (flags) => {
      const { status } = await import('./commands/status.ts');
      result.code = await status(flags, io);
    });

  clusterOptions(
    program
      .command('console')
      .description(
        'the web console: create a KataConfig, watch its rollout node by node, see the metrics; acts as your kubeconfig user. Prints its URL (with a per-run token)',
      ),
  )
    .option('--address <addr>', 'where to listen (host:port; port 0 picks a free port)', parseAddress, '127.0.0.1:0')
    .option('--prometheus-url <url>', "a Prometheus server's URL for the metrics page (e.g. a port-forward to the cluster's)", parseHttpUrl)
    .addHelpText('after', examples([`${name} console`, `${name} console --prometheus-url http://127.0.0.1:9090`]))
    .action(async (flags) => {
      const { runConsole } = await import('./commands/console.ts');
      result.code = await runConsole(flags, io);
    });

  clusterOptions(
    program
      .command('must-gather')
      .description(
        'collect the KataConfig, pools, machine configs, nodes, runtime classes, events, operator namespace and logs into a .tar.gz; secrets redacted',
      ),
  )
    .option('--dest-dir <dir>', 'where to write the archive', '.')
    .addHelpText('after', examples([`${name} must-gather`, `${name} must-gather --dest-dir /tmp`]))
    .action(async (flags) => {
      const { mustGatherCommand } = await import('./commands/mustgather.ts');
      result.code = await mustGatherCommand(flags, io);
    });

  program
    .command('policy')
    .description('Kata Agent policy tooling for peer pods: generate, check and encode policies (osc policy --help)')
    .argument('[args...]')
    .allowUnknownOption()
    .helpOption(false)
    .action(async (args: string[]) => {
      const { runPolicyCommand } = await import('../peerpods/policy-cli.ts');
      const stdin = args.includes('-') ? await readStdin() : undefined;
      const r = runPolicyCommand(args, { stdin });
      io.stdout.write(r.stdout);
      io.stderr.write(r.stderr);
      result.code = r.code;
    });

  program
    .command('initdata')
    .description('initdata for peer pods: build, decode, check and digest the guest configuration (osc initdata --help)')
    .argument('[args...]')
    .allowUnknownOption()
    .helpOption(false)
    .action(async (args: string[]) => {
      const { runInitdataCommand } = await import('./commands/initdata.ts');
      const stdin = args.includes('-') ? await readStdin() : undefined;
      const r = runInitdataCommand(args, { stdin });
      io.stdout.write(r.stdout);
      io.stderr.write(r.stderr);
      result.code = r.code;
    });

  // Commander copies the program's hint to each command as it is created; each names its own help instead.
  for (const cmd of program.commands) cmd.showHelpAfterError(`(run "${name} ${cmd.name()} --help" for usage)`);
  return program;
}

function parseHttpUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError('expected an http:// or https:// URL.');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError('expected an http:// or https:// URL.');
  return value;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
