/** A valid AWS peer pods configuration as unit tests start from: peer-pods-cm (with extra keys) and peer-pods-secret. */
import type { ConfigMap, Secret } from '../../src/kube/resources.ts';

const NS = 'openshift-sandboxed-containers-operator';
const b64 = (s: string) => Buffer.from(s).toString('base64');

export const awsPeerPodsCm = (data: Record<string, string>): ConfigMap => ({
  metadata: { name: 'peer-pods-cm', namespace: NS },
  data: {
    CLOUD_PROVIDER: 'aws',
    AWS_REGION: 'us-east-2',
    AWS_SUBNET_ID: 'subnet-0123456789abcdef0',
    AWS_VPC_ID: 'vpc-0123456789abcdef0',
    AWS_SG_IDS: 'sg-0123456789abcdef0',
    ...data,
  },
});

export const awsPeerPodsSecret: Secret = {
  metadata: { name: 'peer-pods-secret', namespace: NS },
  data: { AWS_ACCESS_KEY_ID: b64('AKIAEXAMPLEKEYID0000'), AWS_SECRET_ACCESS_KEY: b64('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY') },
};
