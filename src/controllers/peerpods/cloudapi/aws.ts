/**
 * The pod VMs of a cluster on AWS, through EC2's Query API (SigV4-signed with the keys the adaptor uses, or
 * with a role's temporary credentials for the operator's own token, X-Amz-Security-Token carried):
 * DescribeInstances filtered by the cluster tag and the live states, TerminateInstances. Errors are EC2's
 * own (`AuthFailure`, `UnauthorizedOperation`, ...), code and message.
 */
import aws4 from 'aws4';
import { XMLParser } from 'fast-xml-parser';
import { CLUSTER_UID_TAG } from '../../../api/podvm-leaks.ts';
import type { PodVM, PodVMInventory } from '../../../peerpods/leaks.ts';
import { CloudAPIError, type CloudEndpoint, CloudHttp, type CloudResponse, target } from './http.ts';
import { assumeRoleWithWebIdentityBody, parseAssumeRoleResponse, stsURL } from './sts.ts';
import { needsRefresh, type SessionCredentials } from './token-exchange.ts';
import { readTokenFile } from './token-file.ts';

export const EC2_API_VERSION = '2016-11-15';
/** Every state but shutting-down and terminated: a VM on its way out needs no help. */
export const LIVE_STATES = ['pending', 'running', 'stopping', 'stopped'] as const;

/** The RoleSessionName osc's sessions carry (CloudTrail shows it). */
export const COLLECTOR_SESSION_NAME = 'osc-podvm-collector';

export interface AwsInventoryOptions {
  region: string;
  /** Keys (peer-pods-secret, or minted), or a role assumed with the operator's token (a workload identity). */
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  webIdentity?: { roleArn: string; tokenFile: string };
  endpoint?: CloudEndpoint;
  now?: () => number;
}

type Item = Record<string, unknown>;
const items = (v: unknown): Item[] => ((v as { item?: Item[] } | undefined)?.item ?? []) as Item[];
const text = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));

const parser = new XMLParser({ ignoreAttributes: true, parseTagValue: false, isArray: (name) => name === 'item' || name === 'Error' });

/** The EC2 error in a response body (`<Response><Errors><Error><Code>...`), or a plain HTTP one. */
export function ec2Error(res: CloudResponse): CloudAPIError {
  try {
    const doc = parser.parse(res.body) as { Response?: { Errors?: { Error?: Item[] } } };
    const e = doc.Response?.Errors?.Error?.[0];
    if (e) return new CloudAPIError(text(e.Code), text(e.Message), res.status);
  } catch {
    // Not EC2's XML: the status says it.
  }
  return new CloudAPIError(`HTTP${res.status}`, res.body.slice(0, 200) || 'no body', res.status);
}

export class Ec2Inventory implements PodVMInventory {
  private readonly http: CloudHttp;
  private readonly opts: AwsInventoryOptions;
  private readonly url: URL;
  private session: SessionCredentials | undefined;

  constructor(opts: AwsInventoryOptions) {
    this.opts = opts;
    this.http = new CloudHttp(opts.endpoint);
    this.url = target(`https://ec2.${opts.region}.amazonaws.com/`, opts.endpoint);
  }

  /** The keys to sign with: the static ones, or the role's, assumed again a margin before they expire. */
  private async credentials(signal?: AbortSignal): Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }> {
    const wi = this.opts.webIdentity;
    if (!wi) {
      return {
        accessKeyId: this.opts.accessKeyId ?? '',
        secretAccessKey: this.opts.secretAccessKey ?? '',
        ...(this.opts.sessionToken ? { sessionToken: this.opts.sessionToken } : {}),
      };
    }
    const now = this.opts.now?.() ?? Date.now();
    if (this.session && !needsRefresh(this.session.expiresAt, now)) return this.session;
    const token = await readTokenFile(wi.tokenFile);
    const res = await this.http.request(target(stsURL(this.opts.region), this.opts.endpoint), {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: assumeRoleWithWebIdentityBody(wi.roleArn, COLLECTOR_SESSION_NAME, token),
      ...(signal ? { signal } : {}),
    });
    this.session = parseAssumeRoleResponse(res);
    return this.session;
  }

  /** One signed Query API call; the parsed response, or the EC2 error thrown. */
  async call(action: string, params: Record<string, string>, signal?: AbortSignal): Promise<Item> {
    const body = new URLSearchParams({ Action: action, Version: EC2_API_VERSION, ...params }).toString();
    const req: aws4.Request = {
      host: this.url.host,
      path: this.url.pathname,
      method: 'POST',
      service: 'ec2',
      region: this.opts.region,
      body,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
    };
    const creds = await this.credentials(signal);
    aws4.sign(req, {
      accessKeyId: creds.accessKeyId,
      secretAccessKey: creds.secretAccessKey,
      ...(creds.sessionToken ? { sessionToken: creds.sessionToken } : {}),
    });
    const headers = Object.fromEntries(Object.entries(req.headers ?? {}).map(([k, v]) => [k, String(v)]));
    const res = await this.http.request(this.url, { method: 'POST', headers, body, ...(signal ? { signal } : {}) });
    if (res.status !== 200) throw ec2Error(res);
    return parser.parse(res.body) as Item;
  }

  async list(clusterUID: string, signal?: AbortSignal): Promise<PodVM[]> {
    const filters: Record<string, string> = {
      'Filter.1.Name': `tag:${CLUSTER_UID_TAG}`,
      'Filter.1.Value.1': clusterUID,
      'Filter.2.Name': 'instance-state-name',
      ...Object.fromEntries(LIVE_STATES.map((s, i) => [`Filter.2.Value.${i + 1}`, s])),
      MaxResults: '1000',
    };
    const vms: PodVM[] = [];
    let token = '';
    do {
      const doc = await this.call('DescribeInstances', { ...filters, ...(token ? { NextToken: token } : {}) }, signal);
      const resp = (doc.DescribeInstancesResponse ?? {}) as Item;
      for (const reservation of items(resp.reservationSet)) {
        for (const inst of items(reservation.instancesSet)) {
          const tags = Object.fromEntries(items(inst.tagSet).map((t) => [text(t.key), text(t.value)]));
          vms.push({ id: text(inst.instanceId), name: tags.Name ?? '', createdAt: text(inst.launchTime), tags });
        }
      }
      token = text(resp.nextToken);
    } while (token);
    return vms;
  }

  async delete(id: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.call('TerminateInstances', { 'InstanceId.1': id }, signal);
    } catch (e) {
      // Gone already (terminated by hand, or long ago): what osc wanted.
      if (e instanceof CloudAPIError && e.code === 'InvalidInstanceID.NotFound') return;
      throw e;
    }
  }

  close(): void {
    this.http.close();
  }
}
