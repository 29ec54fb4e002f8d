import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A Service's virtual IP in miniature, on a loopback port: each new connection goes to one of the ready
 * endpoints (round robin); with none, it is refused, as a Service without endpoints refuses. Established
 * connections stay with their endpoint until either end closes them, as kube-proxy's conntrack keeps them.
 */
export class ServiceProxy {
  private readonly server: Server;
  private endpoints: number[] = [];
  private next = 0;
  private readonly sockets = new Set<Socket>();
  port = 0;
  readonly stats = { connections: 0, refused: 0 };

  private constructor() {
    this.server = createServer((client) => this.accept(client));
  }

  static async start(): Promise<ServiceProxy> {
    const p = new ServiceProxy();
    await new Promise<void>((resolve, reject) => {
      p.server.once('error', reject);
      p.server.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = p.server.address();
    p.port = typeof addr === 'object' && addr ? addr.port : 0;
    return p;
  }

  /** The loopback ports of the ready endpoints. */
  setEndpoints(ports: number[]): void {
    this.endpoints = [...ports];
  }

  get ready(): readonly number[] {
    return this.endpoints;
  }

  private accept(client: Socket): void {
    this.stats.connections++;
    const port = this.endpoints[this.next++ % Math.max(1, this.endpoints.length)];
    if (port === undefined) {
      this.stats.refused++;
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(port, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
