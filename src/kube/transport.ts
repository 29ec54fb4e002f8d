import * as http from 'node:http';
import * as https from 'node:https';
import { type ConnectionOptions, createSecureContext } from 'node:tls';
import type { TlsOptions } from './credentials.ts';

/**
 * The HTTP exchange under KubeClient, on Node's own http/https modules: the operator process does not load
 * a second HTTP stack (undici and its compiled parser cost about 28 MiB of RSS). One keep-alive pool per
 * client for ordinary requests; a connection of its own for each long-lived one (a watch).
 */

/** How long an unused pooled connection stays open (the API server closes idle ones after 90 s). */
const POOL_IDLE_MS = 30_000;
const POOL_MAX_SOCKETS = 64;

export interface TransportOptions {
  /** TLS material for https servers (read once: the CA and client certificate do not rotate in a client's life). */
  tls: TlsOptions;
  /** A request fails, and its connection is destroyed, when its connection carried nothing for this long. */
  requestTimeoutMs: number;
  /** Told each answer's Date header (see ServerClock). */
  onDate?: (date: string | undefined) => void;
}

export interface ExchangeOptions {
  method: string;
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
  /**
   * A connection of its own, closed with the response, for a response that lasts (a watch): a pooled
   * keep-alive connection would be handed, possibly dead and silent, to the next request. The inactivity
   * timeout then only covers the wait for the response's head; the caller watches the body itself.
   */
  dedicated?: boolean;
}

/** No byte arrived on a request's connection for the request timeout: the connection is presumed dead. */
export class RequestTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  constructor(url: URL, ms: number) {
    super(`no response from ${url.host} for ${ms}ms`);
    this.name = 'RequestTimeoutError';
  }
}

/** Why close() ended a request still open (a watch). */
export class TransportClosedError extends Error {
  constructor() {
    super('the client was closed');
    this.name = 'TransportClosedError';
  }
}

/** A response's head, and its body to read once (as text or as a stream of chunks). */
export class Response {
  readonly status: number;
  readonly contentType: string;
  /** The Retry-After header, in seconds, where the server sent a whole number (the form the API server uses). */
  readonly retryAfterSeconds: number | undefined;
  private readonly res: http.IncomingMessage;
  private readonly failure: () => Error | undefined;

  constructor(res: http.IncomingMessage, failure: () => Error | undefined) {
    this.res = res;
    this.status = res.statusCode ?? 0;
    this.contentType = res.headers['content-type'] ?? '';
    const retryAfter = res.headers['retry-after'];
    this.retryAfterSeconds = retryAfter !== undefined && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter) : undefined;
    this.failure = failure;
  }

  /** The whole body as text; rejects with the reason the exchange was ended (abort, timeout, close). */
  async text(): Promise<string> {
    return (await this.bytes()).toString('utf8');
  }

  /** The whole body's bytes; rejects as text() does. */
  async bytes(): Promise<Buffer> {
    const parts: Buffer[] = [];
    await this.each((chunk) => parts.push(chunk));
    return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  }

  /**
   * Calls onChunk with each chunk of the body as it arrives; resolves when the body ended, rejects with the
   * reason the exchange was ended (abort, timeout, close) or with what onChunk threw (the exchange is then
   * ended too). Plain 'data' events: an async iterator over the body costs a promise and a microtask per
   * chunk (two, for a generator over it), and a watch of a thousand nodes carries thousands of chunks.
   */
  each(onChunk: (chunk: Buffer) => void): Promise<void> {
    const res = this.res;
    return new Promise((resolve, reject) => {
      let settled = false;
      const done = (e?: unknown) => {
        if (settled) return;
        settled = true;
        res.off('data', onData);
        if (e === undefined) resolve();
        else reject(this.failure() ?? e);
      };
      const onData = (chunk: Buffer) => {
        try {
          onChunk(chunk);
        } catch (e) {
          done(e);
          res.destroy();
        }
      };
      res.on('data', onData);
      res.once('end', () => done());
      res.once('error', (e) => done(e));
      // Closed before its end: the connection went away (or was destroyed) mid-body.
      res.once('close', () => done(res.complete ? undefined : new Error('the connection closed before the response ended')));
    });
  }

  /** Ends the exchange now (its connection is destroyed, never reused). */
  destroy(): void {
    this.res.destroy();
  }
}

/**
 * Cuts newline-delimited records (a watch's JSON events) out of a byte stream. A newline byte never occurs
 * inside a multi-byte UTF-8 sequence, so lines are cut from the raw bytes and each is decoded once: a large
 * record split over many chunks is copied once, not once per chunk.
 */
export class LineReader {
  private partial: Buffer[] = [];

  /** Calls onLine with each line the chunk completes, trimmed; blank lines are skipped. */
  push(chunk: Buffer, onLine: (line: string) => void): void {
    this.pushBytes(chunk, (bytes) => {
      const line = bytes.toString('utf8').trim();
      if (line) onLine(line);
    });
  }

  /**
   * Calls onLine with the bytes of each line the chunk completes (a view of the chunk where the line lies
   * within it), for a reader that decodes only part of them; empty lines are skipped.
   */
  pushBytes(chunk: Buffer, onLine: (line: Buffer) => void): void {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      const line = this.partial.length ? Buffer.concat([...this.partial, piece]) : piece;
      this.partial = [];
      start = nl + 1;
      // A JSON document starts with `{`; anything else is looked at closer (a blank line, a stray `\r`).
      if (line.length && (line[0] === 0x7b || line.toString('utf8').trim())) onLine(line);
    }
    if (start < chunk.length) this.partial.push(chunk.subarray(start));
  }
}

export class Transport {
  private readonly lib: typeof http | typeof https;
  private readonly pool: http.Agent;
  /** TLS settings for each new connection; the secure context (parsed CA, key) is made once. */
  private readonly connection: ConnectionOptions;
  private readonly requestTimeoutMs: number;
  private readonly onDate: ((date: string | undefined) => void) | undefined;
  /** Ends the requests on dedicated connections (open watches) when the transport closes. */
  private readonly dedicated = new Set<(e: Error) => void>();

  constructor(server: URL, opts: TransportOptions) {
    this.requestTimeoutMs = opts.requestTimeoutMs;
    this.onDate = opts.onDate;
    const secure = server.protocol === 'https:';
    this.lib = secure ? https : http;
    const { ca, cert, key, rejectUnauthorized } = opts.tls;
    this.connection = secure
      ? {
          secureContext: createSecureContext({ ca, cert, key }),
          // Verified unless the credentials turn it off explicitly (insecure-skip-tls-verify).
          rejectUnauthorized: rejectUnauthorized !== false,
        }
      : {};
    const agentOptions: https.AgentOptions = { keepAlive: true, maxSockets: POOL_MAX_SOCKETS, timeout: POOL_IDLE_MS, ...this.connection };
    this.pool = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
  }

  /** Sends a request; answers once the response's head arrived. Rejects with the abort reason when aborted. */
  exchange(url: URL, opts: ExchangeOptions): Promise<Response> {
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.body !== undefined) headers['content-length'] = String(Buffer.byteLength(opts.body));
      const req = this.lib.request(url, {
        method: opts.method,
        headers,
        // A socket timeout, so it covers connecting and the TLS handshake too; a pooled socket goes back to
        // the pool's idle timeout once it is free.
        timeout: this.requestTimeoutMs,
        ...(opts.dedicated ? { agent: false, ...this.connection } : { agent: this.pool }),
      });
      let response: http.IncomingMessage | undefined;
      let failure: Error | undefined;
      // Ends the exchange: its socket is destroyed (a free socket could be dead), never returned to the pool.
      const fail = (e: Error) => {
        if (failure) return;
        failure = e;
        response?.destroy(e);
        req.destroy(e);
      };
      const onAbort = () => {
        const reason = signal?.reason ?? new Error('aborted');
        fail(reason);
        // The caller gave up waiting for the answer (its deadline, AbortSignal.timeout): as with the socket
        // timeout below, the idle siblings of this connection are presumed silent too. A lease renewal that
        // timed out on a black-holed connection otherwise took the next idle one, as dead, and timed out again.
        if (!opts.dedicated && (reason as { name?: string }).name === 'TimeoutError') this.dropIdleConnections();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('timeout', () => {
        fail(new RequestTimeoutError(url, this.requestTimeoutMs));
        // What silenced this pooled connection (a NAT or load balancer forgetting, a peer gone) most likely
        // silenced its idle siblings too: the next requests get fresh connections rather than a timeout each.
        if (!opts.dedicated) this.dropIdleConnections();
      });
      // Set again on every socket: the pool leaves a reused socket with its idle timeout when that equals the
      // request's, and that one may have been shortened by a server's keep-alive hint.
      req.on('socket', (socket) => socket.setTimeout(this.requestTimeoutMs));
      if (opts.dedicated) this.dedicated.add(fail);
      req.once('close', () => {
        signal?.removeEventListener('abort', onAbort);
        this.dedicated.delete(fail);
      });
      req.on('error', (e) => reject(failure ?? e));
      req.on('response', (res) => {
        response = res;
        this.onDate?.(res.headers.date);
        // A long-lived response is watched by its reader; an ordinary one stays under the timeout.
        if (opts.dedicated) req.setTimeout(0);
        resolve(new Response(res, () => failure));
      });
      req.end(opts.body);
    });
  }

  /** Closes the pool's idle connections (those in use finish first). */
  dropIdleConnections(): void {
    for (const sockets of Object.values(this.pool.freeSockets)) for (const s of sockets ?? []) s.destroy();
  }

  /** Destroys every connection: pooled ones, and those of requests still open (their readers reject). */
  close(): void {
    for (const fail of [...this.dedicated]) fail(new TransportClosedError());
    this.pool.destroy();
  }
}
