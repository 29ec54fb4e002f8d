/**
 * Validation of the peer pods configuration: ConfigMap `peer-pods-cm` and Secret `peer-pods-secret` in the
 * operator namespace (docs/peerpods.md, "What the administrator provides"). Pure: the caller fetches the objects.
 *
 * Every problem names the key, says why the value is wrong and how to fix it, so that the KataConfig status
 * can carry it verbatim. Secret values never appear in messages.
 *
 * The keys every cloud has (VXLAN_PORT, PROXY_TIMEOUT, TAGS, ...) are checked here; the pod VM sizes, the
 * image key, the Secret's keys and the cloud's own location keys come from the provider CLOUD_PROVIDER names
 * (src/peerpods/clouds/). Everything not required has a default (PEER_PODS_DEFAULTS, the provider's sizes).
 */
import { OPERATOR_NAMESPACE, PEER_PODS_CM } from '../api/names.ts';
import type { ConfigMap, Secret } from '../kube/resources.ts';
import { cloudChoices, cloudNames, cloudProvider, cloudProviders, defaultCloud } from './clouds/index.ts';
import type { CloudCheckContext, CloudProvider } from './clouds/provider.ts';
import { checkInitdataSetting } from './config-initdata.ts';
import {
  AGENT_PORT,
  CHECKED_APART_CM_KEYS,
  MIN_ROOT_VOLUME_SIZE,
  OSC_SET_ADAPTOR_KEYS,
  OTHER_CLOUD_PROVIDERS,
  PEER_PODS_DEFAULTS,
  type PeerPodsValidation,
  type Problem,
} from './config-schema.ts';
import { validateSecret } from './config-secret.ts';
import { checkSizes } from './config-sizes.ts';
import { commaList, goBool, isPlaceholder, parseGoDuration, positiveInt, q } from './config-values.ts';
import { closestName } from './policy.ts';

export * from './config-schema.ts';
export { parseGoDuration } from './config-values.ts';

/**
 * Validates `peer-pods-cm` and `peer-pods-secret`. `config` is returned, with defaults applied, only when
 * there is no problem at all. `expectedCloud` is the CLOUD_PROVIDER the cluster's Infrastructure suggests,
 * for the messages that must name one before the ConfigMap does (AWS when unknown). `checkCredentials`, when
 * given, replaces the Secret's checks (credentials from the cluster instead: src/peerpods/credentials.ts); it
 * adds its problems and answers the key names.
 */
export function validatePeerPodsConfig(
  cm: ConfigMap | undefined,
  secret: Secret | undefined,
  expectedCloud?: string,
  checkCredentials: (problems: Problem[], cloud: CloudProvider) => string[] = (p, c) => validateSecret(secret, p, c),
): PeerPodsValidation {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const expected = cloudProvider(expectedCloud) ?? defaultCloud();

  if (!cm) {
    problems.push({
      key: PEER_PODS_CM,
      message:
        `ConfigMap ${PEER_PODS_CM} not found in namespace ${OPERATOR_NAMESPACE}: peer pods need it; create it as documented ` +
        `(oc create -f peer-pods-cm.yaml) with at least ${expected.requiredInWords}`,
    });
    checkCredentials(problems, expected);
    return { problems, warnings };
  }

  const data = { ...(cm.data ?? {}) };

  // CLOUD_PROVIDER first: it says which keys the rest are.
  let provider: CloudProvider | undefined;
  const cp = data.CLOUD_PROVIDER;
  if (cp !== undefined && cp !== cp.trim()) {
    problems.push({ key: 'CLOUD_PROVIDER', message: `CLOUD_PROVIDER is ${q(cp)}: it has leading or trailing spaces; remove them` });
  } else if (cp === undefined || cp === '') {
    problems.push({
      key: 'CLOUD_PROVIDER',
      message: `CLOUD_PROVIDER is missing from ConfigMap ${PEER_PODS_CM}: it is required; set it to "${expected.name}"`,
    });
  } else if (cloudProvider(cp)) {
    provider = cloudProvider(cp);
  } else if (cloudProvider(cp.toLowerCase())) {
    problems.push({
      key: 'CLOUD_PROVIDER',
      message: `CLOUD_PROVIDER is ${q(cp)}: provider names are lower case; set it to "${cp.toLowerCase()}"`,
    });
  } else if ((OTHER_CLOUD_PROVIDERS as readonly string[]).includes(cp.toLowerCase())) {
    problems.push({
      key: 'CLOUD_PROVIDER',
      message: `CLOUD_PROVIDER is ${q(cp)}: this operator supports only ${cloudChoices('and')} peer pods so far; run the cluster on one of those clouds and set it to its name`,
    });
  } else {
    const guess = closestName(cp, cloudNames(), 2);
    problems.push({
      key: 'CLOUD_PROVIDER',
      message: `CLOUD_PROVIDER is ${q(cp)}: it is not a known cloud provider; set it to "${guess ?? expected.name}"`,
    });
  }
  // The keys are read as the named cloud's (also when only its spelling is wrong); with none named, as the
  // expected cloud's, for the messages.
  const cloud = provider ?? cloudProvider(cp?.trim().toLowerCase()) ?? expected;
  const cloudKeys: readonly string[] = cloud.cmKeys;

  // Unknown keys: say so only when they look like a misspelt documented key.
  const known = new Set<string>([...CHECKED_APART_CM_KEYS, ...cloudProviders().flatMap((c) => [...c.cmKeys, ...c.otherCmKeys])]);
  for (const key of Object.keys(data)) {
    if ((OSC_SET_ADAPTOR_KEYS as readonly string[]).includes(key)) {
      warnings.push({
        key,
        message: `${key} in ${PEER_PODS_CM} is ignored: osc gives the adaptor the cluster's TLS security profile (the APIServer named cluster)`,
      });
      continue;
    }
    if (known.has(key)) continue;
    const guess = closestName(key, [...cloudKeys, ...CHECKED_APART_CM_KEYS], 3);
    if (guess) {
      warnings.push({ key, message: `${key} is not a peer pods setting and is ignored; did you mean ${guess}?` });
    }
  }

  // Spaces around a value are never intended (the cloud-api-adaptor does not trim them).
  const spaced = new Set<string>();
  for (const key of cloudKeys) {
    const v = data[key];
    if (key === 'CLOUD_PROVIDER' || v === undefined || v === v.trim() || cloud.listKeys.includes(key)) continue;
    problems.push({ key, message: `${key} is ${q(v)}: it has leading or trailing spaces; remove them` });
    spaced.add(key);
  }
  const value = (k: string) => (spaced.has(k) ? undefined : data[k]);

  // Required keys: reported only once the ConfigMap names this cloud.
  const required: CloudCheckContext['required'] = (key, howToFind, check) => {
    if (spaced.has(key)) return undefined;
    const v = data[key];
    if (v === undefined || v === '') {
      if (provider) {
        problems.push({
          key,
          message: `${key} is ${v === undefined ? 'missing from' : 'empty in'} ConfigMap ${PEER_PODS_CM}: it is required for ${cloud.name}; set it to ${howToFind}`,
        });
      }
      return undefined;
    }
    if (isPlaceholder(v)) {
      problems.push({ key, message: `${key} is ${q(v)}, the placeholder from the example: replace it with ${howToFind}` });
      return undefined;
    }
    const why = check(v);
    if (why) {
      problems.push({ key, message: `${key} is ${q(v)}: ${why}` });
      return undefined;
    }
    return v;
  };
  const ctx: CloudCheckContext = {
    value,
    required,
    list: (key, v, what, example) => commaList(key, v, what, example, problems),
    problems,
    warnings,
  };
  // The cloud's own location keys (checked for their shape even while CLOUD_PROVIDER is wrong).
  const settings = cloud.validate(ctx);

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

  const sizes = checkSizes(cloud, value, problems, warnings);

  // The pod VM image: empty means the operator builds it.
  const image = cloud.image;
  const img = value(image.key);
  if (img !== undefined && img !== '') {
    const fix = `set it to your ${image.what}, or to "" to have the operator build the pod VM image`;
    if (isPlaceholder(img)) {
      problems.push({
        key: image.key,
        message: `${image.key} is ${q(img)}, the placeholder from the example: set it to your own ${image.what}, or to "" to have the operator build the pod VM image`,
      });
    } else {
      const why = image.check(img);
      if (why) problems.push({ key: image.key, message: `${image.key} is ${q(img)}: ${why}; ${fix}` });
    }
  }

  const tags = checkTags(cloud, value('TAGS'), problems);

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
    } else if (n > cloud.maxRootVolumeGB) {
      const max = cloud.maxRootVolumeGB;
      problems.push({
        key: 'ROOT_VOLUME_SIZE',
        message: `ROOT_VOLUME_SIZE is ${q(rv)}: the maximum is ${max} (GB, ${cloud.maxRootVolumeWhat}); set it to ${max} or less`,
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
    const i = cloudKeys.indexOf(k);
    return i < 0 ? cloudKeys.length : i;
  };
  problems.sort((a, b) => rank(a.key) - rank(b.key));

  const secretKeys = checkCredentials(problems, cloud);

  if (problems.length > 0 || !provider || !settings || !sizes || !tags) return { problems, warnings };
  return {
    config: {
      cloudProvider: provider.name,
      vxlanPort,
      proxyTimeout,
      proxyTimeoutMs,
      ...sizes,
      ...settings,
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

/** TAGS: key1=value1,key2=value2, with the cloud's rules for keys, values and how many. */
function checkTags(cloud: CloudProvider, tg: string | undefined, problems: Problem[]): Record<string, string> | undefined {
  const tags: Record<string, string> = {};
  if (tg === undefined || tg === '') return tags;
  for (const item of tg.split(',')) {
    const eq = item.indexOf('=');
    const k = eq < 0 ? item : item.slice(0, eq);
    let why: string | undefined;
    if (item === '') why = 'it has an empty item (a leading, trailing or doubled comma)';
    else if (eq < 0) why = `${q(item)} has no "="${item.includes(':') ? ' (use = between key and value, not :)' : ''}`;
    else if (k.trim() === '') why = `${q(item)} has an empty key`;
    else if (k !== k.trim()) why = `the key ${q(k)} has spaces around it`;
    else if (item.length - eq - 1 > cloud.tags.maxValue) why = `the value of ${k} is longer than ${cloud.tags.maxValue} characters`;
    else why = cloud.tags.checkKey(k) ?? (k in tags ? `the key ${q(k)} is given twice` : undefined);
    if (why) {
      problems.push({ key: 'TAGS', message: `TAGS is ${q(tg)}: ${why}; write tags as key1=value1,key2=value2` });
      return undefined;
    }
    tags[k] = item.slice(eq + 1);
  }
  const n = Object.keys(tags).length;
  if (n > cloud.tags.max) {
    problems.push({
      key: 'TAGS',
      message: `TAGS has ${n} tags: ${cloud.title} allows at most ${cloud.tags.max}${cloud.tags.besides ? ` besides ${cloud.tags.besides}` : ''}; remove some`,
    });
    return undefined;
  }
  return tags;
}
