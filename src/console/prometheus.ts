import type { ServerResponse } from 'node:http';
import { status } from './upstream.ts';

/** The read-only parts of Prometheus's HTTP API the metrics page uses. */
const ALLOWED = /^\/api\/v1\/(query|query_range|series|labels|label\/__name__\/values|metadata)$/;

/** Passes PromQL queries to a Prometheus server; nothing else of it is reachable through the console. */
export class PrometheusUpstream {
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  async forward(res: ServerResponse, path: string, params: URLSearchParams): Promise<void> {
    if (!ALLOWED.test(path)) {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status(403, 'Forbidden', `Prometheus ${path} is not available in the console`)));
      return;
    }
    try {
      const r = await fetch(`${this.baseUrl}${path}?${params}`, { signal: AbortSignal.timeout(30_000) });
      res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json', 'cache-control': 'no-store' });
      res.end(Buffer.from(await r.arrayBuffer()));
    } catch (e) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status(502, 'BadGateway', `Prometheus at ${this.baseUrl} did not answer: ${(e as Error).message}`)));
    }
  }
}
