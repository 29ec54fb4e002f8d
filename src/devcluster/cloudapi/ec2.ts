/**
 * EC2's Query API over the dev cluster's pod VMs, as ec2.<region>.amazonaws.com answers it: every request
 * signed with Signature Version 4 by a key the simulated account knows, the action allowed by the key's
 * policy, and EC2's error codes, statuses and XML where not (`MissingAuthenticationToken`, `AuthFailure`,
 * `SignatureDoesNotMatch`, `RequestExpired`, `UnauthorizedOperation`, `InvalidAction`, ...). It answers
 * DescribeInstances (filters `tag:<key>`, `tag-key`, `instance-state-name`, `instance-id`; MaxResults and
 * NextToken) and TerminateInstances.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { XMLBuilder } from 'fast-xml-parser';
import { ACCOUNT_ID, type AwsAccount, AwsError } from '../clouds/aws-account.ts';
import type { SimulatedPodVMs } from '../podvms.ts';
import type { CloudReply, CloudRequest } from './server.ts';

const XMLNS = 'http://ec2.amazonaws.com/doc/2016-11-15/';
/** How far a request's X-Amz-Date may be from the server's clock. */
const MAX_SKEW_MS = 5 * 60_000;

const builder = new XMLBuilder({ ignoreAttributes: false, suppressEmptyNode: true });
const xml = (doc: unknown) => `<?xml version="1.0" encoding="UTF-8"?>\n${builder.build(doc)}`;

/** An EC2 refusal: its code, its HTTP status and its message. */
class Refusal extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

const STATUS_OF: Record<string, number> = { AuthFailure: 401, UnauthorizedOperation: 403, NoCredentialProviders: 401 };

export function errorReply(code: string, status: number, message: string): CloudReply {
  return {
    status,
    contentType: 'text/xml;charset=UTF-8',
    body: xml({ Response: { Errors: { Error: { Code: code, Message: message } }, RequestID: randomUUID() } }),
  };
}

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const hmac = (key: Buffer | string, s: string) => createHmac('sha256', key).update(s, 'utf8').digest();

/** RFC 3986 encoding as SigV4 canonicalises it. */
const encode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

interface Authorization {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
}

function parseAuthorization(header: string | undefined): Authorization | undefined {
  const m =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      header ?? '',
    );
  if (!m) return undefined;
  const [, accessKeyId = '', date = '', region = '', service = '', signed = '', signature = ''] = m;
  return { accessKeyId, date, region, service, signedHeaders: signed.split(';'), signature };
}

/** The signature AWS computes for the request with the key's secret (Signature Version 4). */
export function sigV4(req: CloudRequest, auth: Authorization, amzDate: string, secret: string): string {
  const [path = '/', query = ''] = req.url.split('?');
  const canonicalQuery = [...new URLSearchParams(query)]
    .map(([k, v]) => `${encode(k)}=${encode(v)}`)
    .sort()
    .join('&');
  const header = (name: string) => {
    const v = req.headers[name];
    return (Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ');
  };
  const canonical = [
    req.method,
    path
      .split('/')
      .map((seg) => encode(decodeURIComponent(seg)))
      .join('/'),
    canonicalQuery,
    auth.signedHeaders.map((h) => `${h}:${header(h)}\n`).join(''),
    auth.signedHeaders.join(';'),
    sha256(req.body),
  ].join('\n');
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${secret}`, auth.date);
  for (const part of [auth.region, auth.service, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
}

const parseAmzDate = (s: string) => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  return m ? Date.UTC(+(m[1] ?? 0), +(m[2] ?? 1) - 1, +(m[3] ?? 1), +(m[4] ?? 0), +(m[5] ?? 0), +(m[6] ?? 0)) : Number.NaN;
};

/** Filter.N.Name / Filter.N.Value.M, and the numbered lists (InstanceId.N). */
function filters(params: URLSearchParams): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [k, v] of params) {
    const m = /^Filter\.(\d+)\.Name$/.exec(k);
    if (!m) continue;
    const values: string[] = [];
    for (const [k2, v2] of params) if (k2.startsWith(`Filter.${m[1]}.Value.`)) values.push(v2);
    out.set(v, values);
  }
  return out;
}

const numbered = (params: URLSearchParams, prefix: string) => [...params].filter(([k]) => k.startsWith(`${prefix}.`)).map(([, v]) => v);

/** What the API reads and changes of the cloud's pod VMs (src/devcluster/podvms.ts). */
export type PodVMStore = Pick<SimulatedPodVMs, 'vms' | 'regions' | 'stats' | 'delete'>;

export class Ec2API {
  private readonly account: AwsAccount;
  private readonly vms: PodVMStore;
  /** Instances terminated through the API: EC2 still lists them (terminated) for a while, and terminating again succeeds. */
  private readonly terminated = new Map<string, { region: string; name: string; tags: Record<string, string>; launchTime: string }>();
  private readonly now: () => number;

  constructor(opts: { account: AwsAccount; vms: PodVMStore; now?: () => number }) {
    this.account = opts.account;
    this.vms = opts.vms;
    this.now = opts.now ?? Date.now;
  }

  /** A request to EC2 (an Action in a form body or query, to `/`); undefined for anything else. */
  handle = async (req: CloudRequest): Promise<CloudReply | undefined> => {
    const [path, query = ''] = req.url.split('?');
    if (path !== '/') return undefined;
    const params = new URLSearchParams(req.method === 'POST' ? req.body : query);
    const action = params.get('Action');
    if (!action) return undefined;
    try {
      const region = this.authenticate(req, action);
      return await this.act(action, params, region, req);
    } catch (e) {
      if (e instanceof Refusal) return errorReply(e.code, e.status, e.message);
      throw e;
    }
  };

  /** The signature, the key and the clock: the region the request is for, or the refusal. */
  private authenticate(req: CloudRequest, action: string): string {
    const header = req.headers.authorization;
    if (!header) throw new Refusal('MissingAuthenticationToken', 401, 'Request is missing Authentication Token');
    const auth = parseAuthorization(Array.isArray(header) ? header[0] : header);
    if (!auth)
      throw new Refusal(
        'IncompleteSignature',
        400,
        `Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters: ${header}`,
      );
    if (auth.service !== 'ec2') throw new Refusal('SignatureDoesNotMatch', 403, `Credential should be scoped to correct service: 'ec2'.`);
    const secret = this.account.secretOfKey(auth.accessKeyId);
    // The account decides what an unknown key is (EC2's AuthFailure), and counts the refusal.
    if (secret === undefined) this.authorize({ accessKeyId: auth.accessKeyId, secretAccessKey: '' }, action, '*');
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    const at = parseAmzDate(amzDate);
    if (!auth.signedHeaders.includes('host') || Number.isNaN(at)) {
      throw new Refusal('AuthFailure', 401, 'AWS was not able to validate the provided access credentials');
    }
    if (sigV4(req, auth, amzDate, secret ?? '') !== auth.signature) {
      throw new Refusal(
        'SignatureDoesNotMatch',
        403,
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      );
    }
    if (Math.abs(this.now() - at) > MAX_SKEW_MS || !amzDate.startsWith(auth.date)) {
      throw new Refusal('RequestExpired', 400, `Request has expired. Timestamp date is ${amzDate}`);
    }
    return auth.region;
  }

  /** The account's policy check; its AwsError as EC2's refusal. */
  private authorize(
    creds: { accessKeyId: string; secretAccessKey: string; sessionToken?: string },
    action: string,
    resource: string,
  ): void {
    try {
      this.account.authorize(creds, `ec2:${action}`, resource);
    } catch (e) {
      if (!(e instanceof AwsError)) throw e;
      const detail = e.message.replace(/^An error occurred \([^)]*\) when calling the \w+ operation: /, '');
      throw new Refusal(e.code, STATUS_OF[e.code] ?? 403, detail);
    }
  }

  private keyOf(req: CloudRequest) {
    const auth = parseAuthorization(String(req.headers.authorization));
    const accessKeyId = auth?.accessKeyId ?? '';
    const token = req.headers['x-amz-security-token'];
    return {
      accessKeyId,
      secretAccessKey: this.account.secretOfKey(accessKeyId) ?? '',
      ...(token ? { sessionToken: String(token) } : {}),
    };
  }

  private async act(action: string, params: URLSearchParams, region: string, req: CloudRequest): Promise<CloudReply> {
    const creds = this.keyOf(req);
    if (params.get('Version') === null) throw new Refusal('MissingParameter', 400, 'The request must contain the parameter Version');
    switch (action) {
      case 'DescribeInstances':
        this.authorize(creds, action, '*');
        return this.describe(params, region);
      case 'TerminateInstances': {
        const ids = numbered(params, 'InstanceId');
        if (!ids.length) throw new Refusal('MissingParameter', 400, 'The request must contain the parameter InstanceId');
        for (const id of ids) this.authorize(creds, action, `arn:aws:ec2:${region}:${ACCOUNT_ID}:instance/${id}`);
        return this.terminate(ids, region);
      }
      default:
        throw new Refusal('InvalidAction', 400, `The action ${action} is not valid for this web service.`);
    }
  }

  private instances(region: string) {
    const live = [...this.vms.vms.values()]
      .filter((vm) => (this.vms.regions.get(vm.id) ?? '') === region)
      .map((vm) => ({ id: vm.id, state: 'running', code: 16, tags: vm.tags, launchTime: vm.createdAt }));
    const gone = [...this.terminated]
      .filter(([, t]) => t.region === region)
      .map(([id, t]) => ({ id, state: 'terminated', code: 48, tags: t.tags, launchTime: t.launchTime }));
    return [...live, ...gone];
  }

  private describe(params: URLSearchParams, region: string): CloudReply {
    this.vms.stats.lists++;
    const fs = filters(params);
    const ids = new Set(numbered(params, 'InstanceId'));
    const all = this.instances(region);
    for (const id of ids) {
      if (!all.some((i) => i.id === id)) throw new Refusal('InvalidInstanceID.NotFound', 400, `The instance ID '${id}' does not exist`);
    }
    const known = new Set(['instance-state-name', 'instance-id', 'tag-key']);
    for (const name of fs.keys()) {
      if (!known.has(name) && !name.startsWith('tag:')) throw new Refusal('InvalidParameterValue', 400, `The filter '${name}' is invalid`);
    }
    const match = (i: (typeof all)[number]) =>
      (!ids.size || ids.has(i.id)) &&
      [...fs].every(([name, values]) => {
        if (name === 'instance-state-name') return values.includes(i.state);
        if (name === 'instance-id') return values.includes(i.id);
        if (name === 'tag-key') return values.some((v) => v in i.tags);
        const v = i.tags[name.slice(4)];
        return v !== undefined && values.includes(v);
      });
    const found = all.filter(match);
    const max = params.get('MaxResults');
    if (max !== null && (ids.size || !(Number(max) >= 5 && Number(max) <= 1000))) {
      throw new Refusal(
        'InvalidParameterValue',
        400,
        `Value ( ${max} ) for parameter maxResults is invalid. Expecting a value between 5 and 1000, without instance IDs.`,
      );
    }
    const from = Number(Buffer.from(params.get('NextToken') ?? '', 'base64').toString() || 0);
    const page = max === null ? found : found.slice(from, from + Number(max));
    const next = max !== null && from + Number(max) < found.length ? Buffer.from(String(from + Number(max))).toString('base64') : undefined;
    const body = xml({
      DescribeInstancesResponse: {
        '@_xmlns': XMLNS,
        requestId: randomUUID(),
        reservationSet: {
          item: page.map((i) => ({
            reservationId: `r-${i.id.slice(2)}`,
            ownerId: ACCOUNT_ID,
            instancesSet: {
              item: {
                instanceId: i.id,
                instanceState: { code: i.code, name: i.state },
                launchTime: i.launchTime,
                tagSet: { item: Object.entries(i.tags).map(([key, value]) => ({ key, value })) },
              },
            },
          })),
        },
        ...(next ? { nextToken: next } : {}),
      },
    });
    return { status: 200, contentType: 'text/xml;charset=UTF-8', body };
  }

  private async terminate(ids: string[], region: string): Promise<CloudReply> {
    const live = new Map(this.instances(region).map((i) => [i.id, i]));
    for (const id of ids) {
      if (!/^i-[0-9a-f]{8,17}$/.test(id)) throw new Refusal('InvalidInstanceID.Malformed', 400, `Invalid id: "${id}"`);
      if (!live.has(id)) throw new Refusal('InvalidInstanceID.NotFound', 400, `The instance ID '${id}' does not exist`);
    }
    const items = [];
    for (const id of ids) {
      const i = live.get(id);
      if (i?.state === 'running') {
        try {
          await this.vms.delete(id);
        } catch (e) {
          const code = /^[A-Za-z][\w.]*$/.test((e as Error).message) ? (e as Error).message : 'UnauthorizedOperation';
          throw new Refusal(
            code,
            STATUS_OF[code] ?? 400,
            'You are not authorized to perform this operation. (refused by osc.dev/fail-podvm-deletion)',
          );
        }
        this.terminated.set(id, { region, name: i.tags.Name ?? '', tags: i.tags, launchTime: i.launchTime });
      }
      items.push({
        instanceId: id,
        currentState: i?.state === 'running' ? { code: 32, name: 'shutting-down' } : { code: 48, name: 'terminated' },
        previousState: { code: i?.code ?? 48, name: i?.state ?? 'terminated' },
      });
    }
    const body = xml({ TerminateInstancesResponse: { '@_xmlns': XMLNS, requestId: randomUUID(), instancesSet: { item: items } } });
    return { status: 200, contentType: 'text/xml;charset=UTF-8', body };
  }
}
