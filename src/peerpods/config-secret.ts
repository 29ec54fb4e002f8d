/**
 * The checks of peer-pods-secret: the cloud's credentials (its provider's Secret keys) present, decodable,
 * free of the usual copy-paste mistakes and of the shape the cloud expects. No message ever shows a value.
 */
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from '../api/names.ts';
import type { Secret } from '../kube/resources.ts';
import type { CloudProvider, Problem } from './clouds/provider.ts';
import { isPlaceholder } from './config-values.ts';

function decodeSecretValue(secret: Secret, key: string): { value?: string; invalid?: boolean } {
  const s = secret.stringData?.[key];
  if (s !== undefined) return { value: s };
  const d = secret.data?.[key];
  if (d === undefined) return {};
  const compact = d.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) return { invalid: true };
  return { value: Buffer.from(compact, 'base64').toString('utf8') };
}

export function validateSecret(secret: Secret | undefined, problems: Problem[], cloud: CloudProvider): string[] {
  const { required: requiredKeys, optional: optionalKeys } = cloud.secret;
  if (!secret) {
    problems.push({
      key: PEER_PODS_SECRET,
      message:
        `Secret ${PEER_PODS_SECRET} not found in namespace ${OPERATOR_NAMESPACE}: peer pods on ${cloud.name} need ` +
        `${inWords(requiredKeys)}; create it with ${cloud.secret.createCommand}`,
    });
    return [];
  }
  const keys = [...new Set([...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})])].sort();
  for (const key of [...requiredKeys, ...optionalKeys]) {
    const required = requiredKeys.includes(key);
    const { value, invalid } = decodeSecretValue(secret, key);
    const where = `in Secret ${PEER_PODS_SECRET}`;
    if (invalid) {
      problems.push({
        key,
        message: `${key} ${where} is not valid base64 (values under data must be base64-encoded); recreate the Secret with oc create secret generic --from-literal, or put the value under stringData`,
      });
    } else if (value === undefined || value === '') {
      if (required) {
        problems.push({
          key,
          message: `${key} is ${value === undefined ? 'missing' : 'empty'} ${where}: it is required for ${cloud.name}; set it to ${cloud.secret.describe(key)}`,
        });
      }
    } else if (isPlaceholder(value.trim())) {
      problems.push({ key, message: `${key} ${where} still holds a placeholder like <id>; store the real value` });
    } else if (/[\r\n]$/.test(value) && !isJsonDocument(value)) {
      problems.push({
        key,
        message: `${key} ${where} ends with a line break (was it encoded with echo instead of echo -n?); store the value without it`,
      });
    } else if (value !== value.trim() && !isJsonDocument(value)) {
      problems.push({ key, message: `${key} ${where} has leading or trailing spaces; store the value without them` });
    } else {
      const why = cloud.secret.checkValue?.(key, value);
      if (why) problems.push({ key, message: `${key} ${where} ${why}` });
    }
  }
  return keys;
}

/** `A and B`, `A, B and C`. */
function inWords(keys: readonly string[]): string {
  return keys.length <= 1 ? (keys[0] ?? '') : `${keys.slice(0, -1).join(', ')} and ${keys[keys.length - 1]}`;
}

/** A JSON key file (Google Cloud's) may well end with a line break: it is read as JSON, not as a token. */
const isJsonDocument = (value: string) => /^\s*\{/.test(value);
