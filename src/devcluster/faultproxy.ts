import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on a free loopback port in front of one upstream (the API server, a webhook server), for
 * fault injection: it can cut every connection through it (as a restarting peer does), black-hole them
 * (the bytes stop flowing both ways but neither end is told, as when a NAT or load balancer forgets a
 * connection), slow every byte down (a congested link or an overloaded peer: delayMs), or stop answering
 * altogether for a while. TLS passes through untouched.
 *
 * Its upstream may also be chosen per connection (`route`): a Service in front of the pods that are ready,
 * round robin, and connections refused while none is, as kube-proxy does for a Service without endpoints.
 */
export class FaultProxy {
  private readonly server: Server;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  private readonly swallowed = new Set<Socket>();
  /** 'up' forwards; 'refuse' closes each new connection at once; 'blackhole' accepts it and says nothing. */
  private mode: 'up' | 'refuse' | 'blackhole' = 'up';
  port = 0;
  readonly stats = { connections: 0, cut: 0, blackholed: 0 };

  private readonly upstreamHost: string;
  private readonly upstreamPort: number;
  /** Picks the upstream port for a new connection (undefined: none ready, refused); default the fixed one. */
  route: (() => number | undefined) | undefined;
  /** Added to every chunk's way through, both directions (0: none). */
  delayMs = 0;

  private constructor(upstreamHost: string, upstreamPort: number) {
    this.upstreamHost = upstreamHost;
    this.upstreamPort = upstreamPort;
    this.server = createServer((client) => this.accept(client));
  }

  /** Listens on 127.0.0.1 (a free port unless given) and forwards to host:port. */
  static async start(upstream: { host?: string; port: number }, port = 0): Promise<FaultProxy> {
    const p = new FaultProxy(upstream.host ?? '127.0.0.1', upstream.port);
    await new Promise<void>((resolve, reject) => {
      p.server.once('error', reject);
      p.server.listen(port, '127.0.0.1', () => resolve());
    });
    const addr = p.server.address();
    p.port = typeof addr === 'object' && addr ? addr.port : 0;
    return p;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Open connections (forwarded or black-holed). */
  get open(): number {
    return this.pairs.size + this.swallowed.size;
  }

  private accept(client: Socket): void {
    this.stats.connections++;
    if (this.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    if (this.mode === 'blackhole') {
      this.swallow(client);
      return;
    }
    const port = this.route ? this.route() : this.upstreamPort;
    if (port === undefined) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(port, this.upstreamHost);
    const pair = { client, upstream };
    this.pairs.add(pair);
    const close = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    this.forward(client, upstream);
    this.forward(upstream, client);
  }

  /**
   * Pipes `from` into `to`; while delayMs is set, each chunk leaves delayMs after it came, never before the
   * one ahead of it (the order of a byte stream is kept when the delay changes).
   */
  private forward(from: Socket, to: Socket): void {
    let last = 0;
    from.on('data', (chunk: Buffer) => {
      if (this.delayMs <= 0 && last <= performance.now()) {
        if (!to.destroyed) to.write(chunk);
        return;
      }
      const at = Math.max(performance.now() + this.delayMs, last);
      last = at;
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk);
      }, at - performance.now());
    });
  }

  /** Keeps the socket open and reads (and drops) whatever it sends: the peer sees a connection that went quiet. */
  private swallow(client: Socket): void {
    this.stats.blackholed++;
    this.swallowed.add(client);
    client.removeAllListeners('data');
    client.on('data', () => {});
    client.on('error', () => client.destroy());
    client.on('close', () => this.swallowed.delete(client));
    client.resume();
  }

  /** Closes every open connection (the upstream end too): its peers see the connection end, as on a restart. */
  cutAll(): number {
    const n = this.pairs.size;
    for (const { client, upstream } of [...this.pairs]) {
      client.destroy();
      upstream.destroy();
    }
    this.pairs.clear();
    this.stats.cut += n;
    return n;
  }

  /**
   * Black-holes every established connection: the upstream end is closed, the client end stays open and
   * hears nothing more. New connections pass (unless the mode says otherwise).
   */
  blackholeAll(): number {
    const n = this.pairs.size;
    for (const pair of [...this.pairs]) {
      this.pairs.delete(pair);
      pair.client.removeAllListeners('data');
      pair.upstream.removeAllListeners('data');
      pair.upstream
        .removeAllListeners('close')
        .removeAllListeners('error')
        .on('error', () => {});
      pair.upstream.destroy();
      pair.client.removeAllListeners('close').removeAllListeners('error');
      this.swallow(pair.client);
    }
    return n;
  }

  /** What happens to new connections from now on. */
  setMode(mode: 'up' | 'refuse' | 'blackhole'): void {
    this.mode = mode;
  }

  async close(): Promise<void> {
    this.cutAll();
    for (const s of this.swallowed) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
