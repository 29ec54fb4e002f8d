import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { consoleApiPath } from './api-allowlist.ts';
import { type Bundle, buildBundle } from './bundle.ts';
import { PrometheusUpstream } from './prometheus.ts';
import { cookieName, csrfRefusal, hostAllowed, presentedToken, sameToken } from './security.ts';
import { KubeUpstream, status } from './upstream.ts';

/** What the console knows beyond the API: an operator running in this process (`osc start`). */
export interface LocalOperator {
  where: string;
  identity: string;
  ready: () => boolean;
  metricsUrl?: string;
}

export interface ConsoleOptions {
  kubeConfig: KubeConfig;
  /** Default 127.0.0.1; port 0 picks a free one. */
  host?: string;
  port?: number;
  /**
   * A Prometheus server's base URL (its HTTP API answers under /api/v1), or where one is coming from: the
   * dev cluster's may still be building when the console opens (`note` says so).
   */
  prometheus?: string | (() => { url?: string; note?: string });
  version: string;
  localOperator?: LocalOperator;
  /** The per-run token; random unless given (tests). */
  token?: string;
  log?: Logger;
}

export interface RunningConsole {
  /** The URL to open: it carries the token. */
  url: string;
  /** The URL without the token. */
  origin: string;
  token: string;
  close(): Promise<void>;
}

const INDEX = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>osc console</title><link rel="stylesheet" href="/assets/app.css"></head>
<body><div id="app"></div><script type="module" src="/assets/app.js"></script></body></html>`;

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

/**
 * The web console's server: static front end, the user's Kubernetes API requests and watches passed
 * through with their kubeconfig credentials, and PromQL queries passed to Prometheus. It keeps no state
 * but the token.
 */
export async function startConsole(opts: ConsoleOptions): Promise<RunningConsole> {
  const bundle: Bundle = await buildBundle();
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const host = opts.host ?? '127.0.0.1';
  const kube = new KubeUpstream(opts.kubeConfig);
  const promSource = opts.prometheus;
  const prometheus = (): { url?: string; note?: string } =>
    typeof promSource === 'function'
      ? promSource()
      : promSource
        ? { url: promSource }
        : { note: 'no Prometheus configured: start the console with --prometheus-url' };
  const context = opts.kubeConfig.getCurrentContext();
  const user = opts.kubeConfig.getCurrentUser()?.name ?? '';
  let port = 0;
  let origin = '';

  const send = (res: ServerResponse, code: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
    res.writeHead(code, { ...SECURITY_HEADERS, 'content-type': type, ...extra });
    res.end(body);
  };
  const refuse = (res: ServerResponse, code: number, reason: string, message: string) =>
    send(res, code, 'application/json', JSON.stringify(status(code, reason, message)));

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', origin);
    if (!hostAllowed(req.headers.host, port, host))
      return refuse(res, 403, 'Forbidden', `unexpected Host header ${req.headers.host ?? ''}`);

    // Opening the printed URL: trade the token in the query for a cookie, and drop it from the address bar.
    const queryToken = url.searchParams.get('token');
    if (method === 'GET' && url.pathname === '/' && queryToken !== null) {
      if (!sameToken(queryToken, token)) return send(res, 401, 'text/plain', 'wrong console token: open the URL osc printed\n');
      return send(res, 303, 'text/plain', '', {
        location: '/',
        'set-cookie': `${cookieName(port)}=${token}; HttpOnly; SameSite=Strict; Path=/`,
      });
    }
    if (!sameToken(presentedToken(req.headers, cookieName(port)), token)) {
      return url.pathname === '/'
        ? send(res, 401, 'text/plain', 'this console needs its token: open the URL that osc console (or npm start) printed\n')
        : refuse(res, 401, 'Unauthorized', 'the console token is missing or wrong: open the URL osc printed');
    }
    const csrf = csrfRefusal(method, req.headers, origin);
    if (csrf) return refuse(res, 403, 'Forbidden', csrf);

    // The raw path, not the URL parser's: that one resolves `..` and `%2e%2e` before any guard could see them.
    const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
    if (rawPath.startsWith('/k8s/') || url.pathname.startsWith('/k8s/')) {
      const api = consoleApiPath(method, rawPath.startsWith('/k8s/') ? rawPath.slice(4) : rawPath);
      if (api.refusal !== undefined) return refuse(res, 403, 'Forbidden', api.refusal);
      // The rebuilt path goes upstream, so the API server acts on exactly the path that was allowed.
      return kube.forward(req, res, api.path + url.search);
    }
    if (url.pathname.startsWith('/prometheus/')) {
      const p = prometheus();
      if (!p.url) return refuse(res, 503, 'ServiceUnavailable', p.note ?? 'no Prometheus');
      if (method !== 'GET') return refuse(res, 405, 'MethodNotAllowed', 'the console only queries Prometheus');
      return new PrometheusUpstream(p.url).forward(res, url.pathname.slice('/prometheus'.length), url.searchParams);
    }
    if (method !== 'GET') return refuse(res, 405, 'MethodNotAllowed', `${method} ${url.pathname} is not supported`);
    switch (url.pathname) {
      case '/':
        return send(res, 200, 'text/html; charset=utf-8', INDEX);
      case '/assets/app.js':
        return send(res, 200, 'text/javascript; charset=utf-8', bundle.js);
      case '/assets/app.css':
        return send(res, 200, 'text/css; charset=utf-8', bundle.css);
      case '/console/info':
        return send(
          res,
          200,
          'application/json',
          JSON.stringify({
            version: opts.version,
            context,
            user,
            server: kube.serverUrl,
            prometheus: prometheus().url ?? '',
            prometheusNote: prometheus().note ?? '',
            localOperator: opts.localOperator && {
              where: opts.localOperator.where,
              identity: opts.localOperator.identity,
              ready: opts.localOperator.ready(),
              metricsUrl: opts.localOperator.metricsUrl ?? '',
            },
          }),
        );
      case '/favicon.ico':
        return send(res, 204, 'image/x-icon', '');
      default:
        return refuse(res, 404, 'NotFound', `no such page: ${url.pathname}`);
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      opts.log?.warn({ err: e }, 'console request failed');
      if (!res.headersSent) refuse(res, 500, 'InternalError', (e as Error).message);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  origin = `http://${shownHost}:${port}`;
  return {
    url: `${origin}/?token=${token}`,
    origin,
    token,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await kube.close();
    },
  };
}
