/**
 * The dev cluster's cloud API endpoint: one HTTPS server on loopback, with a certificate of its own CA,
 * that answers the wire protocol of the simulated cloud (EC2's Query API here; Azure's and Google Cloud's
 * REST APIs beside it) as the real endpoints do, refusals included. osc's cloud clients reach it through
 * their endpoint override (`osc run --cloud-api-endpoint`), exactly as they reach a cloud.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createCA, issueCert } from '../../kube/pki.ts';
import { silentLogger } from '../../runtime/log.ts';

/** One request, read whole. */
export interface CloudRequest {
  method: string;
  /** The path with its query. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** One answer. */
export interface CloudReply {
  status: number;
  contentType: string;
  body: string;
}

/** A cloud's API: answers the requests it recognises (undefined: not its path). */
export type CloudHandler = (req: CloudRequest) => Promise<CloudReply | undefined> | CloudReply | undefined;

const MAX_BODY = 1 << 20;

export class CloudAPIServer {
  private server: Server | undefined;
  private readonly handlers: CloudHandler[] = [];
  private readonly log: Logger;
  /** The PEM of the CA the server's certificate is issued by (what a client trusts). */
  ca = '';
  /** `https://127.0.0.1:<port>` once started. */
  url = '';
  /** Requests answered, by status. */
  readonly stats = new Map<number, number>();

  constructor(opts: { log?: Logger } = {}) {
    this.log = opts.log ?? silentLogger();
  }

  /** Adds a cloud's API; the first handler that recognises a request answers it. */
  handle(handler: CloudHandler): void {
    this.handlers.push(handler);
  }

  async start(): Promise<void> {
    const ca = await createCA('osc dev cluster cloud API CA');
    const cert = await issueCert(ca, { commonName: 'cloud-api', ipAddresses: ['127.0.0.1'], dnsNames: ['localhost'], usage: 'server' });
    this.ca = ca.certPem;
    const server = createServer({ cert: cert.certPem, key: cert.keyPem }, (req, res) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let reply: CloudReply;
    try {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const c of req as AsyncIterable<Buffer>) {
        size += c.length;
        if (size > MAX_BODY) throw new Error('request body too large');
        chunks.push(c);
      }
      const request = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      let answered: CloudReply | undefined;
      for (const h of this.handlers) {
        answered = await h(request);
        if (answered) break;
      }
      reply = answered ?? { status: 404, contentType: 'text/plain', body: `no cloud API at ${request.method} ${request.url}` };
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'simulated cloud API failed');
      reply = { status: 500, contentType: 'text/plain', body: (e as Error).message };
    }
    this.stats.set(reply.status, (this.stats.get(reply.status) ?? 0) + 1);
    res.writeHead(reply.status, { 'content-type': reply.contentType, 'content-length': Buffer.byteLength(reply.body) });
    res.end(reply.body);
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
