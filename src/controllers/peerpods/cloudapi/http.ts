/**
 * One HTTPS exchange with a cloud API, on Node's own https module (the operator loads no second HTTP stack
 * and runs where there is no global fetch). A keep-alive agent per client; every request has a deadline.
 */
import * as https from 'node:https';

/** Where a client sends its requests instead of the cloud's own endpoints (tests, air-gapped mirrors). */
export interface CloudEndpoint {
  /** `https://host:port`: every request goes there, with the path it would have had on the cloud. */
  url?: string;
  /** The PEM certificate authorities that endpoint's certificate is checked against (else the system's). */
  ca?: string;
}

export interface CloudResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A cloud's refusal, in its own words: the code its API answers with, and its message. */
export class CloudAPIError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(`${code}: ${message}`);
    this.name = 'CloudAPIError';
    this.code = code;
    this.status = status;
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

/** The URL a request goes to: the cloud's, or the same path on the endpoint override. */
export function target(cloudURL: string, endpoint: CloudEndpoint | undefined): URL {
  const url = new URL(cloudURL);
  if (!endpoint?.url) return url;
  const over = new URL(endpoint.url);
  return new URL(`${url.pathname}${url.search}`, over);
}

export class CloudHttp {
  private readonly agent: https.Agent;
  constructor(endpoint: CloudEndpoint | undefined) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: 4, ...(endpoint?.ca ? { ca: endpoint.ca } : {}) });
  }

  request(
    url: URL,
    opts: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  ): Promise<CloudResponse> {
    if (url.protocol !== 'https:') return Promise.reject(new Error(`cloud API endpoints are https only, not ${url.href}`));
    return new Promise((resolve, reject) => {
      const req = https.request(
        url,
        {
          method: opts.method,
          headers: { ...opts.headers, ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}) },
          agent: this.agent,
          timeout: REQUEST_TIMEOUT_MS,
          ...(opts.signal ? { signal: opts.signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer from ${url.host} within ${REQUEST_TIMEOUT_MS / 1000}s`)));
      req.on('error', reject);
      req.end(opts.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
