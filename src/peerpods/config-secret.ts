/**
 * The checks of peer-pods-secret: the AWS credentials present, decodable and free of the usual copy-paste
 * mistakes. No message ever shows a value.
 */
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from '../api/names.ts';
import type { Secret } from '../kube/resources.ts';
import { OPTIONAL_SECRET_KEYS, type Problem, REQUIRED_SECRET_KEYS } from './config-schema.ts';
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

export function validateSecret(secret: Secret | undefined, problems: Problem[]): string[] {
  if (!secret) {
    problems.push({
      key: PEER_PODS_SECRET,
      message:
        `Secret ${PEER_PODS_SECRET} not found in namespace ${OPERATOR_NAMESPACE}: peer pods on aws need AWS_ACCESS_KEY_ID and ` +
        `AWS_SECRET_ACCESS_KEY; create it with oc create secret generic ${PEER_PODS_SECRET} -n ${OPERATOR_NAMESPACE} ` +
        '--from-literal AWS_ACCESS_KEY_ID=<id> --from-literal AWS_SECRET_ACCESS_KEY=<key>',
    });
    return [];
  }
  const keys = [...new Set([...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})])].sort();
  for (const key of [...REQUIRED_SECRET_KEYS, ...OPTIONAL_SECRET_KEYS]) {
    const required = (REQUIRED_SECRET_KEYS as readonly string[]).includes(key);
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
          message: `${key} is ${value === undefined ? 'missing' : 'empty'} ${where}: it is required for aws; set it to the AWS ${key === 'AWS_ACCESS_KEY_ID' ? 'access key ID' : 'secret access key'} the pod VMs are created with`,
        });
      }
    } else if (isPlaceholder(value.trim())) {
      problems.push({ key, message: `${key} ${where} still holds a placeholder like <id>; store the real value` });
    } else if (/[\r\n]$/.test(value)) {
      problems.push({
        key,
        message: `${key} ${where} ends with a line break (was it encoded with echo instead of echo -n?); store the value without it`,
      });
    } else if (value !== value.trim()) {
      problems.push({ key, message: `${key} ${where} has leading or trailing spaces; store the value without them` });
    }
  }
  return keys;
}
