import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';

/** Request headers worth passing to the API server; the browser's cookies and auth never go upstream. */
const FORWARD_REQUEST = ['accept', 'content-type'];
const FORWARD_RESPONSE = ['content-type', 'warning', 'audit-id'];

/**
 * Forwards a browser request to the API server with the kubeconfig user's credentials, streaming the
 * answer back (so a watch stays a watch). Nothing is cached: each request is the user's own, live.
 */
export class KubeUpstream {
  private readonly server: string;
  private agent: Promise<Agent> | undefined;

  private readonly kubeConfig: KubeConfig;

  constructor(kubeConfig: KubeConfig) {
    this.kubeConfig = kubeConfig;
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster: set a current-context');
    this.server = cluster.server.replace(/\/+$/, '');
  }

  get serverUrl(): string {
    return this.server;
  }

  private makeAgent(): Promise<Agent> {
    return (async () => {
      const tls: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer; rejectUnauthorized?: boolean } = {};
      await this.kubeConfig.applyToHTTPSOptions(tls as never);
      // No body timeout: watches stay open as long as the browser keeps them.
      return new Agent({ connect: tls, keepAliveTimeout: 30_000, bodyTimeout: 0, headersTimeout: 30_000 });
    })();
  }

  async forward(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const url = this.server + path;
    const ctx = new RequestContext(url, (req.method ?? 'GET') as HttpMethod);
    await this.kubeConfig.applySecurityAuthentication(ctx);
    const headers: Record<string, string> = { ...(ctx.getHeaders() as Record<string, string>) };
    for (const h of FORWARD_REQUEST) {
      const v = req.headers[h];
      if (typeof v === 'string') headers[h] = v;
    }
    const ac = new AbortController();
    // The browser went away (page closed, watch replaced): end the upstream request too.
    res.on('close', () => ac.abort());
    this.agent ??= this.makeAgent();
    const method = req.method ?? 'GET';
    const hasBody = !['GET', 'HEAD', 'DELETE'].includes(method) || Number(req.headers['content-length'] ?? 0) > 0;
    try {
      const upstream = await fetch(ctx.getUrl(), {
        method,
        headers,
        body: hasBody ? (Readable.toWeb(req) as ReadableStream) : undefined,
        duplex: 'half',
        dispatcher: await this.agent,
        signal: ac.signal,
        redirect: 'manual',
      } as Parameters<typeof fetch>[1]);
      const out: Record<string, string> = { 'cache-control': 'no-store' };
      for (const h of FORWARD_RESPONSE) {
        const v = upstream.headers.get(h);
        if (v) out[h] = v;
      }
      res.writeHead(upstream.status, out);
      // A watch may stay silent for minutes: the browser must get the headers now, not with the first event.
      res.flushHeaders();
      if (upstream.body) await pipeline(Readable.fromWeb(upstream.body as never), res);
      else res.end();
    } catch (e) {
      if (ac.signal.aborted) return;
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status(502, 'BadGateway', `the API server at ${this.server} did not answer: ${(e as Error).message}`)));
      } else res.destroy();
    }
  }

  async close(): Promise<void> {
    const a = this.agent;
    this.agent = undefined;
    if (a) await (await a).destroy();
  }
}

/** A Kubernetes Status object, so that the front end reads the console's refusals like the API server's. */
export function status(code: number, reason: string, message: string) {
  return { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message };
}
