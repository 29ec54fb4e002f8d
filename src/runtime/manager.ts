import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTLSServer, type Server as TLSServer } from 'node:https';
import { hostname } from 'node:os';
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { KubeClient, ResourceType } from '../kube/client.ts';
import { errorMessage } from '../kube/errors.ts';
import type { KubeObject } from '../kube/types.ts';
import { Controller, type ControllerSpec } from './controller.ts';
import { EventRecorder } from './events.ts';
import { Informer, type InformerOptions } from './informer.ts';
import { type ElectionClocks, type ElectionOutcome, type LeaderElectionConfig, LeaderElector } from './leaderelection.ts';
import { defaultLeaderElection } from './leasetimings.ts';
import { RuntimeMetrics } from './metrics.ts';
import type { DelegatingAuth } from './metricsauth.ts';
import { DEFAULT_TLS_OPTIONS, type TLSServerOptions } from './tlsprofile.ts';

export interface ManagerOptions {
  client: KubeClient;
  log: Logger;
  metrics?: RuntimeMetrics;
  /** Lease-based leader election; without it this instance always reconciles. */
  leaderElection?: Partial<LeaderElectionConfig> & { namespace: string; name: string };
  /**
   * host:port for /metrics; undefined = none. Plain HTTP (with /healthz and /readyz beside it) unless
   * `secureMetrics` is given.
   */
  metricsAddress?: string;
  /** Serve /metrics alone over TLS, to clients the API server authenticates and authorises. */
  secureMetrics?: { tls: ServingCert; auth: DelegatingAuth };
  /** Minimum TLS version and ciphers of the secure metrics server (the cluster's profile); default Intermediate. */
  tlsOptions?: TLSServerOptions;
  /** host:port for /healthz and /readyz if they should be served apart from metrics. */
  healthAddress?: string;
  /** Identity for leases and events; defaults to hostname + random suffix. */
  identity?: string;
  informerDefaults?: InformerOptions;
  /** The clocks leader election measures with (tests step them). */
  clocks?: ElectionClocks;
}

/** This replica lost its lease: it has stopped, and must be restarted (as a standby) rather than carry on. */
export class LeadershipLostError extends Error {
  constructor(namespace: string, name: string) {
    super(`leader election lost: the lease ${namespace}/${name} could not be renewed within the renew deadline; restart to stand again`);
    this.name = 'LeadershipLostError';
  }
}

type Runnable = (signal: AbortSignal) => Promise<void>;

export interface ServingCert {
  certPem: string;
  keyPem: string;
}

/**
 * Owns the shared informers and the controllers: starts the caches, waits for them to sync, runs the
 * controllers while this instance leads, serves metrics and probes, and shuts everything down in order.
 */
export class Manager {
  readonly client: KubeClient;
  readonly log: Logger;
  readonly metrics: RuntimeMetrics;
  readonly identity: string;
  readonly events: EventRecorder;
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private readonly transforms = new Map<string, InformerOptions['transform']>();
  private readonly controllers: Controller[] = [];
  private readonly leaderRunnables: Runnable[] = [];
  private readonly opts: ManagerOptions;
  private elector: LeaderElector | undefined;
  private servers: Server[] = [];
  private metricsServer: Server | TLSServer | undefined;
  private healthServer: Server | undefined;
  private ready = false;
  private readonly checks = new Map<string, () => boolean>();
  /** What the secure metrics server presents: its certificate and the cluster's TLS profile. */
  private metricsTLS: { cert?: ServingCert; options: TLSServerOptions };

  constructor(opts: ManagerOptions) {
    this.opts = opts;
    this.metricsTLS = { cert: opts.secureMetrics?.tls, options: opts.tlsOptions ?? DEFAULT_TLS_OPTIONS };
    this.client = opts.client;
    this.log = opts.log;
    this.metrics = opts.metrics ?? new RuntimeMetrics();
    this.metrics.observeClient(this.client);
    this.identity = opts.identity ?? `${hostname()}_${Math.random().toString(36).slice(2, 10)}`;
    this.events = new EventRecorder(this.client, 'kataconfiguration.openshift.io/osc', this.identity, this.log);
  }

  /** The shared informer for a resource (and optional selector): controllers watching the same kind share one. */
  informer<T extends KubeObject>(rt: ResourceType<T>, opts: InformerOptions = {}): Informer<T> {
    const key = JSON.stringify([rt.group, rt.version, rt.plural, opts.namespace, opts.labelSelector, opts.fieldSelector]);
    let inf = this.informers.get(key);
    // One cache per kind, so one reduction of it: a second transform would silently not apply.
    if (inf && opts.transform !== this.transforms.get(key))
      throw new Error(`the ${rt.plural} informer is shared: every controller must pass it the same transform`);
    if (!inf) {
      this.transforms.set(key, opts.transform);
      inf = new Informer<KubeObject>(this.client, rt as ResourceType<KubeObject>, {
        ...this.opts.informerDefaults,
        log: this.log,
        ...opts,
      });
      this.informers.set(key, inf);
    }
    return inf as unknown as Informer<T>;
  }

  addController(spec: ControllerSpec): Controller {
    const c = new Controller(spec, this.log, this.metrics, (fn) => this.client.onRecovered(fn));
    this.controllers.push(c);
    return c;
  }

  /** Work that runs only on the leader, beside the controllers (e.g. a webhook registrar). */
  addLeaderRunnable(r: Runnable): void {
    this.leaderRunnables.push(r);
  }

  /** Extra readiness check (all must pass for /readyz). */
  addReadyCheck(name: string, check: () => boolean): void {
    this.checks.set(name, check);
  }

  get isLeader(): boolean {
    return this.elector ? this.elector.isLeader : this.ready;
  }

  get isReady(): boolean {
    return this.ready && [...this.checks.values()].every((c) => c());
  }

  /**
   * Runs until signal aborts. Caches start at once on every replica, so that a standby that wins the
   * lease can reconcile without waiting for a fresh list. Rejects with LeadershipLostError when this
   * replica could not renew its lease in time: by then its controllers and leader runnables have been told
   * to stop and its caches and servers are shut, and the process should exit (non-zero) so that the
   * Deployment restarts it as a standby, as controller-runtime does. It never campaigns again itself: a
   * replica cut off from the API server may hold stale caches and half-done work.
   */
  async start(signal: AbortSignal): Promise<void> {
    await this.serve();
    // Stopped while the servers came up: an abort listener added now would never fire.
    if (signal.aborted) {
      await this.closeServers();
      return;
    }
    const lost = new AbortController();
    const running = AbortSignal.any([signal, lost.signal]);
    const informerRuns = [...this.informers.values()].map((i) => i.run(running));
    const synced = await Promise.all([...this.informers.values()].map((i) => i.waitForSync(running)));
    if (signal.aborted || !synced.every(Boolean)) {
      await Promise.allSettled(informerRuns);
      await this.closeServers();
      return;
    }
    this.ready = true;
    this.log.info({ informers: this.informers.size, controllers: this.controllers.map((c) => c.name) }, 'caches synced');

    const lead = async (leadSignal: AbortSignal) => {
      this.metrics.leader.set({ name: this.opts.leaderElection?.name ?? 'none' }, 1);
      try {
        await Promise.all([...this.controllers.map((c) => c.run(leadSignal)), ...this.leaderRunnables.map((r) => r(leadSignal))]);
      } finally {
        this.metrics.leader.set({ name: this.opts.leaderElection?.name ?? 'none' }, 0);
      }
    };

    let outcome: ElectionOutcome = 'stopped';
    if (this.opts.leaderElection) {
      const le = this.opts.leaderElection;
      this.elector = new LeaderElector(
        this.client,
        { ...defaultLeaderElection, identity: this.identity, ...le },
        this.log.child({ component: 'leader-election' }),
        this.opts.clocks,
      );
      outcome = await this.elector.run(signal, lead);
      if (outcome === 'lost') {
        this.metrics.leader.set({ name: le.name }, 0);
        lost.abort(new LeadershipLostError(le.namespace, le.name));
      }
    } else {
      await lead(signal);
    }
    await Promise.allSettled(informerRuns);
    await this.closeServers();
    this.ready = false;
    if (outcome === 'lost') throw lost.signal.reason;
    this.log.info('manager stopped');
  }

  private async serve(): Promise<void> {
    const secure = this.opts.secureMetrics;
    const { metricsAddress: m, healthAddress: h } = this.opts;
    const plan: { addr: string; routes: Set<string>; tls?: { tls: ServingCert; auth: DelegatingAuth } }[] = [];
    // Plain metrics share a server with the probes when given the same address; secure metrics never do:
    // the kubelet probes without credentials.
    if (m && !secure && m === h) plan.push({ addr: m, routes: new Set(['/metrics', '/healthz', '/readyz']) });
    else {
      if (m) plan.push({ addr: m, routes: new Set(secure ? ['/metrics'] : ['/metrics', '/healthz', '/readyz']), tls: secure });
      if (h) plan.push({ addr: h, routes: new Set(['/healthz', '/readyz']) });
    }
    for (const { addr, routes, tls } of plan) {
      const server = tls
        ? createTLSServer(this.metricsContext(), (req, res) => void this.handle(req, res, routes, tls.auth))
        : createServer((req, res) => void this.handle(req, res, routes));
      const { host, port } = parseAddress(addr);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve());
      });
      const a = server.address();
      this.log.info(
        { address: typeof a === 'object' && a ? `${a.address}:${a.port}` : addr, routes: [...routes], tls: Boolean(tls) },
        'serving',
      );
      this.servers.push(server as Server);
      if (routes.has('/metrics')) this.metricsServer = server;
      if (routes.has('/healthz')) this.healthServer = server as Server;
    }
  }

  /** A new serving certificate for the secure metrics server; connections made from now on get it. */
  reloadMetricsCert(tls: ServingCert): void {
    const s = this.metricsServer;
    const next = { cert: tls, options: this.metricsTLS.options };
    if (s && 'setSecureContext' in s) s.setSecureContext(this.metricsContext(next));
    this.metricsTLS = next;
  }

  /** The cluster's TLS profile for the secure metrics server, from the next handshake on. */
  setTLSOptions(options: TLSServerOptions): void {
    const s = this.metricsServer;
    const next = { cert: this.metricsTLS.cert, options };
    if (s && 'setSecureContext' in s) s.setSecureContext(this.metricsContext(next));
    this.metricsTLS = next;
  }

  private metricsContext(t = this.metricsTLS): SecureContextOptions {
    const { minVersion, ciphers } = t.options;
    return { cert: t.cert?.certPem, key: t.cert?.keyPem, minVersion, ciphers };
  }

  /** Where /metrics is served (host:port, useful with port 0), and whether over TLS. */
  get metricsEndpoint(): { address: string; secure: boolean } | undefined {
    const address = boundAddress(this.metricsServer);
    return address ? { address, secure: Boolean(this.opts.secureMetrics) } : undefined;
  }

  /** Where /healthz and /readyz are served (host:port). */
  get healthAddress(): string | undefined {
    return boundAddress(this.healthServer);
  }

  /** The address the first HTTP server listens on (useful with port 0). */
  get boundAddress(): string | undefined {
    const a = this.servers[0]?.address();
    return typeof a === 'object' && a ? `${a.address}:${a.port}` : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse, routes: Set<string>, auth?: DelegatingAuth): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    try {
      if (auth && routes.has(path)) {
        const d = await auth.check(req.headers.authorization, path, req.method ?? 'GET');
        if (!d.ok) {
          this.log.debug({ path, status: d.status, reason: d.message }, 'metrics request refused');
          res.writeHead(d.status, { 'content-type': 'text/plain' }).end(`${d.message}\n`);
          return;
        }
      }
      if (!routes.has(path)) {
        res.writeHead(404).end('not found\n');
      } else if (path === '/metrics') {
        const body = await this.metrics.registry.metrics();
        res.writeHead(200, { 'content-type': this.metrics.registry.contentType }).end(body);
      } else if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      } else if (path === '/readyz') {
        const ok = this.isReady;
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'caches not synced\n');
      }
    } catch (e) {
      res.writeHead(500).end(`${errorMessage(e)}\n`);
    }
  }

  private async closeServers(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    for (const s of this.servers) s.closeAllConnections();
    this.servers = [];
    this.metricsServer = undefined;
    this.healthServer = undefined;
  }
}

function boundAddress(server: Server | TLSServer | undefined): string | undefined {
  const a = server?.address();
  return typeof a === 'object' && a ? `${a.address}:${a.port}` : undefined;
}

export function parseAddress(addr: string): { host: string; port: number } {
  const i = addr.lastIndexOf(':');
  const host = i > 0 ? addr.slice(0, i).replace(/^\[|\]$/g, '') : '0.0.0.0';
  const port = Number(i >= 0 ? addr.slice(i + 1) : addr);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid address "${addr}": expected host:port`);
  return { host: host || '0.0.0.0', port };
}

/** Aborts on SIGTERM or SIGINT, for graceful shutdown of `osc run` and the dev cluster. */
export function signalController(log?: Logger): AbortController {
  const ac = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (ac.signal.aborted) {
      log?.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(1);
    }
    log?.info({ signal: sig }, 'shutting down');
    ac.abort(new Error(`received ${sig}`));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return ac;
}
