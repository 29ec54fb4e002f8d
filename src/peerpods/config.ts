/**
 * Validation of the peer pods configuration: ConfigMap `peer-pods-cm` and Secret `peer-pods-secret` in the
 * operator namespace (docs/peerpods.md, "What the administrator provides"). Pure: the caller fetches the objects.
 *
 * Every problem names the key, says why the value is wrong and how to fix it, so that the KataConfig status
 * can carry it verbatim. Secret values never appear in messages.
 *
 * Required for aws (the values the documented procedure has the administrator look up and fill in):
 * CLOUD_PROVIDER, AWS_REGION, AWS_SUBNET_ID, AWS_VPC_ID, AWS_SG_IDS; in the Secret AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY. Everything else has a default (see PEER_PODS_DEFAULTS).
 */
import { OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import type { ConfigMap, Secret } from '../kube/resources.ts';
import { checkInitdataSetting } from './config-initdata.ts';
import {
  AGENT_PORT,
  CHECKED_APART_CM_KEYS,
  MAX_ROOT_VOLUME_SIZE,
  MAX_TAGS,
  MIN_ROOT_VOLUME_SIZE,
  OTHER_CLOUD_PROVIDERS,
  OTHER_CM_KEYS,
  PEER_PODS_CM_KEYS,
  PEER_PODS_DEFAULTS,
  type PeerPodsValidation,
  type Problem,
  SUPPORTED_CLOUD_PROVIDERS,
} from './config-schema.ts';
import { validateSecret } from './config-secret.ts';
import {
  awsId,
  commaList,
  goBool,
  HOW_TO_FIND,
  INSTANCE_TYPE_RE,
  isPlaceholder,
  parseGoDuration,
  positiveInt,
  q,
  REGION_LOOKUP,
  REGION_RE,
} from './config-values.ts';
import { closestName } from './policy.ts';

export * from './config-schema.ts';
export { parseGoDuration } from './config-values.ts';

/**
 * Validates `peer-pods-cm` and `peer-pods-secret`. `config` is returned, with defaults applied, only when
 * there is no problem at all. `checkCredentials`, when given, replaces the Secret's checks (credentials
 * from the cluster instead: src/peerpods/credentials.ts); it adds its problems and answers the key names.
 */
export function validatePeerPodsConfig(
  cm: ConfigMap | undefined,
  secret: Secret | undefined,
  checkCredentials: (problems: Problem[]) => string[] = (p) => validateSecret(secret, p),
): PeerPodsValidation {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];

  if (!cm) {
    problems.push({
      key: PEER_PODS_CM,
      message:
        `ConfigMap ${PEER_PODS_CM} not found in namespace ${OPERATOR_NAMESPACE}: peer pods need it; create it as documented ` +
        `(oc create -f peer-pods-cm.yaml) with at least CLOUD_PROVIDER, AWS_REGION, AWS_SUBNET_ID, AWS_VPC_ID and AWS_SG_IDS`,
    });
    checkCredentials(problems);
    return { problems, warnings };
  }

  const data = { ...(cm.data ?? {}) };

  // Unknown keys: say so only when they look like a misspelt documented key.
  const known = new Set<string>([...PEER_PODS_CM_KEYS, ...CHECKED_APART_CM_KEYS, ...OTHER_CM_KEYS]);
  for (const key of Object.keys(data)) {
    if (known.has(key)) continue;
    const guess = closestName(key, [...PEER_PODS_CM_KEYS, ...CHECKED_APART_CM_KEYS], 3);
    if (guess) {
      warnings.push({ key, message: `${key} is not a peer pods setting and is ignored; did you mean ${guess}?` });
    }
  }

  // Spaces around a value are never intended (the cloud-api-adaptor does not trim them).
  const spaced = new Set<string>();
  for (const key of PEER_PODS_CM_KEYS) {
    const v = data[key];
    if (v !== undefined && v !== v.trim() && key !== 'PODVM_INSTANCE_TYPES' && key !== 'AWS_SG_IDS') {
      problems.push({ key, message: `${key} is ${q(v)}: it has leading or trailing spaces; remove them` });
      spaced.add(key);
    }
  }
  const value = (k: string) => (spaced.has(k) ? undefined : data[k]);

  // CLOUD_PROVIDER
  let provider: string | undefined;
  const cp = value('CLOUD_PROVIDER');
  if (!spaced.has('CLOUD_PROVIDER')) {
    if (cp === undefined || cp === '') {
      problems.push({
        key: 'CLOUD_PROVIDER',
        message: `CLOUD_PROVIDER is missing from ConfigMap ${PEER_PODS_CM}: it is required; set it to "aws"`,
      });
    } else if ((SUPPORTED_CLOUD_PROVIDERS as readonly string[]).includes(cp)) {
      provider = cp;
    } else if ((SUPPORTED_CLOUD_PROVIDERS as readonly string[]).includes(cp.toLowerCase())) {
      problems.push({ key: 'CLOUD_PROVIDER', message: `CLOUD_PROVIDER is ${q(cp)}: provider names are lower case; set it to "aws"` });
    } else if ((OTHER_CLOUD_PROVIDERS as readonly string[]).includes(cp.toLowerCase())) {
      problems.push({
        key: 'CLOUD_PROVIDER',
        message: `CLOUD_PROVIDER is ${q(cp)}: this operator supports only "aws" peer pods so far; run the cluster on AWS and set it to "aws"`,
      });
    } else {
      problems.push({ key: 'CLOUD_PROVIDER', message: `CLOUD_PROVIDER is ${q(cp)}: it is not a known cloud provider; set it to "aws"` });
    }
  }

  // Required AWS location keys.
  const checkRequired = (key: string, check: (v: string) => string | undefined): string | undefined => {
    if (spaced.has(key)) return undefined;
    const v = data[key];
    if (v === undefined || v === '') {
      if (provider === 'aws') {
        problems.push({
          key,
          message: `${key} is ${v === undefined ? 'missing from' : 'empty in'} ConfigMap ${PEER_PODS_CM}: it is required for aws; set it to ${HOW_TO_FIND[key]}`,
        });
      }
      return undefined;
    }
    if (isPlaceholder(v)) {
      problems.push({ key, message: `${key} is ${q(v)}, the placeholder from the example: replace it with ${HOW_TO_FIND[key]}` });
      return undefined;
    }
    const why = check(v);
    if (why) {
      problems.push({ key, message: `${key} is ${q(v)}: ${why}` });
      return undefined;
    }
    return v;
  };
  const region = checkRequired('AWS_REGION', (v) =>
    REGION_RE.test(v) ? undefined : `it is not an AWS region name (like us-east-1); set it to the cluster's region (${REGION_LOOKUP})`,
  );
  const subnetId = checkRequired('AWS_SUBNET_ID', (v) =>
    awsId('subnet').test(v) ? undefined : "it is not a subnet ID (subnet- followed by 8 or 17 hex digits); set it to a worker's subnet ID",
  );
  const vpcId = checkRequired('AWS_VPC_ID', (v) =>
    awsId('vpc').test(v) ? undefined : "it is not a VPC ID (vpc- followed by 8 or 17 hex digits); set it to the workers' VPC ID",
  );
  let securityGroupIds: string[] | undefined;
  const sg = checkRequired('AWS_SG_IDS', () => undefined);
  if (sg !== undefined) {
    const items = commaList('AWS_SG_IDS', sg, 'security group', 'sg-0123456789abcdef0,sg-0fedcba9876543210', problems);
    if (items) {
      const bad = items.find((i) => !awsId('sg').test(i));
      if (bad !== undefined) {
        problems.push({
          key: 'AWS_SG_IDS',
          message: `AWS_SG_IDS is ${q(sg)}: ${q(bad)} is not a security group ID (sg- followed by 8 or 17 hex digits); list the workers' security group IDs, comma separated`,
        });
      } else securityGroupIds = items;
    }
  }

  // VXLAN_PORT
  let vxlanPort: number = PEER_PODS_DEFAULTS.VXLAN_PORT;
  const vp = value('VXLAN_PORT');
  if (vp !== undefined && vp !== '') {
    const n = positiveInt(vp);
    if (n === undefined || n < 1 || n > 65535) {
      problems.push({
        key: 'VXLAN_PORT',
        message: `VXLAN_PORT is ${q(vp)}: it must be a port number from 1 to 65535; set it to 9000 as documented`,
      });
    } else if (n === AGENT_PORT) {
      problems.push({
        key: 'VXLAN_PORT',
        message: `VXLAN_PORT is ${q(vp)}: port ${AGENT_PORT} is the Kata agent's port in the pod VM; set it to 9000 as documented`,
      });
    } else {
      vxlanPort = n;
      if (n !== PEER_PODS_DEFAULTS.VXLAN_PORT) {
        warnings.push({
          key: 'VXLAN_PORT',
          message: `VXLAN_PORT is ${n}: the documented procedure opens port 9000 in the security groups; open port ${n} (tcp) instead`,
        });
      }
    }
  }

  // PROXY_TIMEOUT
  let proxyTimeout: string = PEER_PODS_DEFAULTS.PROXY_TIMEOUT;
  let proxyTimeoutMs = parseGoDuration(proxyTimeout) as number;
  const pt = value('PROXY_TIMEOUT');
  if (pt !== undefined && pt !== '') {
    const ms = parseGoDuration(pt);
    if (ms === undefined) {
      const hint = /^\d+(\.\d+)?$/.test(pt) ? ' (a number needs a unit)' : '';
      problems.push({
        key: 'PROXY_TIMEOUT',
        message: `PROXY_TIMEOUT is ${q(pt)}: it is not a duration${hint}; write it like 5m, 30s or 1h30m`,
      });
    } else if (ms <= 0) {
      problems.push({
        key: 'PROXY_TIMEOUT',
        message: `PROXY_TIMEOUT is ${q(pt)}: it must be longer than zero; set it to 5m as documented`,
      });
    } else {
      proxyTimeout = pt;
      proxyTimeoutMs = ms;
    }
  }

  // Instance types
  let instanceType: string = PEER_PODS_DEFAULTS.PODVM_INSTANCE_TYPE;
  let typeOk = true;
  const it = value('PODVM_INSTANCE_TYPE');
  if (it !== undefined && it !== '') {
    if (!INSTANCE_TYPE_RE.test(it)) {
      typeOk = false;
      problems.push({
        key: 'PODVM_INSTANCE_TYPE',
        message: `PODVM_INSTANCE_TYPE is ${q(it)}: it is not an AWS instance type name (like t3.medium); set it to one`,
      });
    } else instanceType = it;
  }
  let instanceTypes: string[] = [];
  const its = value('PODVM_INSTANCE_TYPES');
  if (its !== undefined && its !== '') {
    const items = commaList('PODVM_INSTANCE_TYPES', its, 'instance type', 't3.small,t3.medium,t3.large', problems);
    if (items) {
      const bad = items.find((i) => !INSTANCE_TYPE_RE.test(i));
      if (bad !== undefined) {
        problems.push({
          key: 'PODVM_INSTANCE_TYPES',
          message: `PODVM_INSTANCE_TYPES is ${q(its)}: ${q(bad)} is not an AWS instance type name (like t3.medium); list instance types, comma separated, without spaces`,
        });
      } else instanceTypes = items;
    }
  }
  if (typeOk && instanceTypes.length > 0 && !instanceTypes.includes(instanceType)) {
    warnings.push({
      key: 'PODVM_INSTANCE_TYPE',
      message: `PODVM_INSTANCE_TYPE ${instanceType} is not in PODVM_INSTANCE_TYPES (${instanceTypes.join(',')}); pods may use it anyway, as the default`,
    });
  }
  const allowedInstanceTypes = [...instanceTypes];
  if (!allowedInstanceTypes.includes(instanceType)) allowedInstanceTypes.push(instanceType);

  // PODVM_AMI_ID: empty means the operator builds the image.
  let amiId = '';
  const ami = value('PODVM_AMI_ID');
  if (ami !== undefined && ami !== '') {
    if (isPlaceholder(ami)) {
      problems.push({
        key: 'PODVM_AMI_ID',
        message: `PODVM_AMI_ID is ${q(ami)}, the placeholder from the example: set it to your own AMI ID, or to "" to have the operator build the pod VM image`,
      });
    } else if (!awsId('ami').test(ami)) {
      problems.push({
        key: 'PODVM_AMI_ID',
        message: `PODVM_AMI_ID is ${q(ami)}: it is not an AMI ID (ami- followed by 8 or 17 hex digits); set it to your AMI ID, or to "" to have the operator build the pod VM image`,
      });
    } else amiId = ami;
  }

  // TAGS
  const tags: Record<string, string> = {};
  const tg = value('TAGS');
  if (tg !== undefined && tg !== '') {
    const items = tg.split(',');
    let ok = true;
    for (const item of items) {
      const eq = item.indexOf('=');
      const k = eq < 0 ? item : item.slice(0, eq);
      const fail = (why: string) => {
        problems.push({ key: 'TAGS', message: `TAGS is ${q(tg)}: ${why}; write tags as key1=value1,key2=value2` });
        ok = false;
      };
      if (item === '') fail('it has an empty item (a leading, trailing or doubled comma)');
      else if (eq < 0) fail(`${q(item)} has no "="${item.includes(':') ? ' (use = between key and value, not :)' : ''}`);
      else if (k.trim() === '') fail(`${q(item)} has an empty key`);
      else if (k !== k.trim()) fail(`the key ${q(k)} has spaces around it`);
      else if (k.length > 128) fail(`the key ${q(k)} is longer than 128 characters`);
      else if (item.length - eq - 1 > 256) fail(`the value of ${k} is longer than 256 characters`);
      else if (/^aws:/i.test(k)) fail(`the key ${q(k)} starts with aws:, which AWS reserves`);
      else if (k === 'Name') fail('the key Name is set by the operator for each pod VM');
      else if (k in tags) fail(`the key ${q(k)} is given twice`);
      else tags[k] = item.slice(eq + 1);
      if (!ok) break;
    }
    if (ok && Object.keys(tags).length > MAX_TAGS) {
      problems.push({
        key: 'TAGS',
        message: `TAGS has ${Object.keys(tags).length} tags: AWS allows at most ${MAX_TAGS} besides Name; remove some`,
      });
    }
  }

  // PEERPODS_LIMIT_PER_NODE
  let limitPerNode: number = PEER_PODS_DEFAULTS.PEERPODS_LIMIT_PER_NODE;
  const lim = value('PEERPODS_LIMIT_PER_NODE');
  if (lim !== undefined && lim !== '') {
    const n = positiveInt(lim);
    if (n === undefined || n < 1) {
      problems.push({
        key: 'PEERPODS_LIMIT_PER_NODE',
        message: `PEERPODS_LIMIT_PER_NODE is ${q(lim)}: it must be a whole number of pod VMs per node, 1 or more; set it to 10 (the default) or more`,
      });
    } else limitPerNode = n;
  }

  // ROOT_VOLUME_SIZE
  let rootVolumeSizeGB: number = PEER_PODS_DEFAULTS.ROOT_VOLUME_SIZE;
  const rv = value('ROOT_VOLUME_SIZE');
  if (rv !== undefined && rv !== '') {
    const n = positiveInt(rv);
    if (n === undefined) {
      const hint = /^\d+\s*[A-Za-z]+$/.test(rv) ? ' without a unit' : '';
      problems.push({
        key: 'ROOT_VOLUME_SIZE',
        message: `ROOT_VOLUME_SIZE is ${q(rv)}: it must be a whole number of GB${hint}; set it to 6 or more`,
      });
    } else if (n < MIN_ROOT_VOLUME_SIZE) {
      problems.push({ key: 'ROOT_VOLUME_SIZE', message: `ROOT_VOLUME_SIZE is ${q(rv)}: the minimum is 6 (GB); set it to 6 or more` });
    } else if (n > MAX_ROOT_VOLUME_SIZE) {
      problems.push({
        key: 'ROOT_VOLUME_SIZE',
        message: `ROOT_VOLUME_SIZE is ${q(rv)}: the maximum is ${MAX_ROOT_VOLUME_SIZE} (GB, the largest EBS volume); set it to ${MAX_ROOT_VOLUME_SIZE} or less`,
      });
    } else rootVolumeSizeGB = n;
  }

  // DISABLECVM
  let disableCVM: boolean = PEER_PODS_DEFAULTS.DISABLECVM;
  const dc = value('DISABLECVM');
  if (dc !== undefined && dc !== '') {
    const b = goBool(dc);
    if (b === undefined) {
      problems.push({ key: 'DISABLECVM', message: `DISABLECVM is ${q(dc)}: it must be true or false; set it to "true" as documented` });
    } else disableCVM = b;
  }

  checkInitdataSetting(data, problems, warnings);

  // Report in the documented key order (the order of the example ConfigMap), Secret problems last.
  const rank = (k: string) => {
    const i = (PEER_PODS_CM_KEYS as readonly string[]).indexOf(k);
    return i < 0 ? PEER_PODS_CM_KEYS.length : i;
  };
  problems.sort((a, b) => rank(a.key) - rank(b.key));

  const secretKeys = checkCredentials(problems);

  if (problems.length > 0 || provider !== 'aws' || !region || !subnetId || !vpcId || !securityGroupIds) {
    return { problems, warnings };
  }
  return {
    config: {
      cloudProvider: 'aws',
      vxlanPort,
      proxyTimeout,
      proxyTimeoutMs,
      instanceType,
      instanceTypes,
      allowedInstanceTypes,
      amiId,
      region,
      subnetId,
      vpcId,
      securityGroupIds,
      tags,
      limitPerNode,
      rootVolumeSizeGB,
      disableCVM,
      secretKeys,
      data,
    },
    problems,
    warnings,
  };
}
