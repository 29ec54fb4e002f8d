import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { errorMessage } from '../kube/errors.ts';
import { parseAddress } from '../runtime/manager.ts';
import { DEFAULT_TLS_OPTIONS, type TLSServerOptions } from '../runtime/tlsprofile.ts';
import { type AdmissionRequest, type AdmissionReview, type Decision, respond } from './admission.ts';

// biome-ignore lint/suspicious/noExplicitAny: handlers take any kind of object
export type AdmissionHandler = (req: AdmissionRequest<any>) => Decision | Promise<Decision>;

const MAX_BODY = 8 * 1024 * 1024;

/**
 * How a stopping server lets go of the API server's keep-alive connections. Closing an idle connection
 * races with a request the API server may be writing on it at that moment, which then fails (EOF) and,
 * the webhooks failing closed, is refused: the API server does not retry a POST. So a stopping server
 * first answers every request with `Connection: close` (the client then reconnects, through the Service,
 * to a replica that is not stopping) and closes what is left only once no request came for a while.
 */
export const SHUTDOWN = { quietMs: 1_000, maxMs: 5_000 };

/**
 * Serves AdmissionReviews over TLS. A handler that throws is answered with a denial naming the error (the
 * webhook configuration's failurePolicy decides what the API server makes of an unreachable webhook).
 */
export class WebhookServer {
  private server: Server | undefined;
  private readonly handlers = new Map<string, AdmissionHandler>();
  private readonly log: Logger;
  private readonly connections = new Set<Socket>();
  private stopping = false;
  private lastRequestAt = 0;
  private cert: { certPem: string; keyPem: string } | undefined;
  private options: TLSServerOptions;

  constructor(log: Logger, options: TLSServerOptions = DEFAULT_TLS_OPTIONS) {
    this.log = log;
    this.options = options;
  }

  handle(path: string, handler: AdmissionHandler): void {
    this.handlers.set(path, handler);
  }

  /** The TLS server while listening (tests observe its handshakes). */
  get tlsServer(): Server | undefined {
    return this.server;
  }

  /** Admission requests answered (any decision), for tests and the log. */
  answered = 0;

  async listen(address: string, tls: { certPem: string; keyPem: string }): Promise<number> {
    const { host, port } = parseAddress(address);
    this.cert = tls;
    const server = createServer(this.context(), (req, res) => {
      this.lastRequestAt = performance.now();
      if (this.stopping) res.setHeader('connection', 'close');
      const handler = this.handlers.get((req.url ?? '').split('?')[0] ?? '');
      if (req.method !== 'POST' || !handler) {
        res.writeHead(req.method === 'GET' && req.url === '/healthz' ? 200 : 404).end();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BODY) req.destroy();
        else chunks.push(c);
      });
      req.on('end', async () => {
        let review: AdmissionReview;
        try {
          review = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          res.writeHead(400).end('malformed AdmissionReview');
          return;
        }
        const request = review.request;
        if (!request?.uid) {
          res.writeHead(400).end('AdmissionReview without a request');
          return;
        }
        let decision: Decision;
        try {
          decision = await handler(request);
        } catch (e) {
          this.log.error({ err: errorMessage(e), path: req.url }, 'admission handler failed');
          decision = { allowed: false, code: 500, reason: 'InternalError', message: `osc admission webhook error: ${errorMessage(e)}` };
        }
        const body: AdmissionReview = {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: respond(request.uid, decision),
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        this.answered++;
      });
    });
    server.on('connection', (socket: Socket) => {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    const a = server.address();
    const bound = typeof a === 'object' && a ? a.port : port;
    this.log.info({ address: `${host}:${bound}`, paths: [...this.handlers.keys()] }, 'serving admission webhooks');
    return bound;
  }

  /**
   * Serves another certificate from the next TLS handshake on. Connections already open keep the one they
   * agreed on (still valid: certificates are rotated well before they expire), so no request is dropped.
   */
  updateTLS(tls: { certPem: string; keyPem: string }): void {
    if (!this.server) throw new Error('the webhook server is not listening');
    this.server.setSecureContext(this.context(tls));
    this.cert = tls;
  }

  /** The cluster's TLS profile (minimum version, ciphers), from the next handshake on. */
  setTLSOptions(options: TLSServerOptions): void {
    this.server?.setSecureContext(this.context(this.cert, options));
    this.options = options;
  }

  private context(cert = this.cert, options = this.options): SecureContextOptions {
    return { cert: cert?.certPem, key: cert?.keyPem, minVersion: options.minVersion, ciphers: options.ciphers };
  }

  /** Stops serving: lets the clients' connections go as SHUTDOWN says, then closes what is left. */
  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    this.stopping = true;
    const started = performance.now();
    this.lastRequestAt = started;
    while (
      this.connections.size > 0 &&
      performance.now() - started < SHUTDOWN.maxMs &&
      performance.now() - this.lastRequestAt < SHUTDOWN.quietMs
    )
      await new Promise((r) => setTimeout(r, 50));
    await new Promise<void>((r) => {
      s.close(() => r());
      s.closeAllConnections();
    });
  }
}
