/**
 * Peer pods on AWS: the keys of the documented peer-pods-cm (region, subnet, VPC, security groups), the
 * access key Secret, EC2 instance types and the AMI the image job builds.
 */
import { OPERATOR_NAMESPACE, PEER_PODS_SECRET } from '../../../api/names.ts';
import { CLUSTER_UID_TAG } from '../../../api/podvm-leaks.ts';
import { q } from '../../config-values.ts';
import type { CloudProvider } from '../provider.ts';
import { awsIssued } from './credentials.ts';
import { AWS_INSTANCE_TYPES } from './sizes.ts';

export interface AwsSettings {
  /** PODVM_AMI_ID; '' means the operator must build the pod VM image. */
  amiId: string;
  region: string;
  subnetId: string;
  vpcId: string;
  securityGroupIds: string[];
}

export const AWS_REGION_LOOKUP = "oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.aws.region}'";
const INSTANCE_LOOKUP = 'aws ec2 describe-instances --instance-ids <worker instance id>';

/** How to find each required value, as the documented procedure does it. */
const HOW_TO_FIND = {
  AWS_REGION: `the cluster's region (${AWS_REGION_LOOKUP})`,
  AWS_SUBNET_ID: `a worker's subnet (${INSTANCE_LOOKUP} --query 'Reservations[*].Instances[*].SubnetId')`,
  AWS_VPC_ID: `a worker's VPC (${INSTANCE_LOOKUP} --query 'Reservations[*].Instances[*].VpcId')`,
  AWS_SG_IDS: `a worker's security groups, comma separated (${INSTANCE_LOOKUP} --query 'Reservations[*].Instances[*].SecurityGroups[*].GroupId')`,
};

export const AWS_REGION_RE = /^[a-z]{2}(-[a-z]+)+-\d+$/;
export const awsId = (prefix: string) => new RegExp(`^${prefix}-([0-9a-f]{8}|[0-9a-f]{17})$`);

/** The documented ConfigMap keys, in the order of the example. */
export const AWS_CM_KEYS = [
  'CLOUD_PROVIDER',
  'VXLAN_PORT',
  'PROXY_TIMEOUT',
  'PODVM_INSTANCE_TYPE',
  'PODVM_INSTANCE_TYPES',
  'PODVM_AMI_ID',
  'AWS_REGION',
  'AWS_SUBNET_ID',
  'AWS_VPC_ID',
  'AWS_SG_IDS',
  'TAGS',
  'PEERPODS_LIMIT_PER_NODE',
  'ROOT_VOLUME_SIZE',
  'DISABLECVM',
] as const;

export const aws: CloudProvider<AwsSettings> = {
  name: 'aws',
  title: 'AWS',
  infrastructureType: 'AWS',
  cmKeys: AWS_CM_KEYS,
  // The image job needs the VPC; the adaptor finds it from the subnet.
  notReadByAdaptor: ['AWS_VPC_ID'],
  otherCmKeys: [
    'USE_PUBLIC_IP',
    'USE_PODVM_LAUNCHTEMPLATE',
    'PODVM_LAUNCHTEMPLATE_NAME',
    'SSH_KP_NAME',
    'DISABLE_CLOUD_CONFIG',
    'ENABLE_CLOUD_PROVIDER_EXTERNAL_PLUGIN',
    'CLOUD_CONFIG_VERIFY',
  ],
  listKeys: ['PODVM_INSTANCE_TYPES', 'AWS_SG_IDS'],
  requiredInWords: 'CLOUD_PROVIDER, AWS_REGION, AWS_SUBNET_ID, AWS_VPC_ID and AWS_SG_IDS',
  sizes: {
    defaultKey: 'PODVM_INSTANCE_TYPE',
    listKey: 'PODVM_INSTANCE_TYPES',
    // The docs' example default type.
    defaultSize: 't3.medium',
    noun: 'instance type',
    short: 'type',
    pattern: /^[a-z][a-z0-9-]*\.[a-z0-9]+$/,
    shape: 'an AWS instance type name (like t3.medium)',
    listExample: 't3.small,t3.medium,t3.large',
    // The documented example's default (t3.medium) is not in its own list, and the adaptor uses it anyway.
    defaultOutsideList: 'warning',
    table: AWS_INSTANCE_TYPES,
    warnUnknown: false,
  },
  image: {
    key: 'PODVM_AMI_ID',
    deletionEnv: 'AMI_ID',
    // The AMI is registered in AWS_REGION, named by the builder.
    creationEnv: {},
    what: 'AMI ID',
    noun: 'AMI',
    check: (v) => (awsId('ami').test(v) ? undefined : 'it is not an AMI ID (ami- followed by 8 or 17 hex digits)'),
    example: 'ami-0123456789abcdef0',
  },
  secret: {
    required: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'],
    optional: ['AWS_SESSION_TOKEN'],
    describe: (key) => `the AWS ${key === 'AWS_ACCESS_KEY_ID' ? 'access key ID' : 'secret access key'} the pod VMs are created with`,
    createCommand:
      `oc create secret generic ${PEER_PODS_SECRET} -n ${OPERATOR_NAMESPACE} ` +
      '--from-literal AWS_ACCESS_KEY_ID=<id> --from-literal AWS_SECRET_ACCESS_KEY=<key>',
  },
  credentials: awsIssued,
  tags: {
    // AWS allows 50 tags per instance; the cloud-api-adaptor adds `Name`, osc the cluster's tag.
    max: 48,
    besides: `Name and ${CLUSTER_UID_TAG}`,
    clusterTag: true,
    maxValue: 256,
    checkKey(k) {
      if (k.length > 128) return `the key ${q(k)} is longer than 128 characters`;
      if (/^aws:/i.test(k)) return `the key ${q(k)} starts with aws:, which AWS reserves`;
      if (k === 'Name') return 'the key Name is set by the operator for each pod VM';
      if (k === CLUSTER_UID_TAG) return `the key ${CLUSTER_UID_TAG} is set by the operator (the cluster's UID)`;
      return undefined;
    },
  },
  maxRootVolumeGB: 16384,
  maxRootVolumeWhat: 'the largest EBS volume',

  validate(ctx) {
    const region = ctx.required('AWS_REGION', HOW_TO_FIND.AWS_REGION, (v) =>
      AWS_REGION_RE.test(v)
        ? undefined
        : `it is not an AWS region name (like us-east-1); set it to the cluster's region (${AWS_REGION_LOOKUP})`,
    );
    const subnetId = ctx.required('AWS_SUBNET_ID', HOW_TO_FIND.AWS_SUBNET_ID, (v) =>
      awsId('subnet').test(v)
        ? undefined
        : "it is not a subnet ID (subnet- followed by 8 or 17 hex digits); set it to a worker's subnet ID",
    );
    const vpcId = ctx.required('AWS_VPC_ID', HOW_TO_FIND.AWS_VPC_ID, (v) =>
      awsId('vpc').test(v) ? undefined : "it is not a VPC ID (vpc- followed by 8 or 17 hex digits); set it to the workers' VPC ID",
    );
    let securityGroupIds: string[] | undefined;
    const sg = ctx.required('AWS_SG_IDS', HOW_TO_FIND.AWS_SG_IDS, () => undefined);
    if (sg !== undefined) {
      const items = ctx.list('AWS_SG_IDS', sg, 'security group', 'sg-0123456789abcdef0,sg-0fedcba9876543210');
      if (items) {
        const bad = items.find((i) => !awsId('sg').test(i));
        if (bad !== undefined) {
          ctx.problems.push({
            key: 'AWS_SG_IDS',
            message: `AWS_SG_IDS is ${q(sg)}: ${q(bad)} is not a security group ID (sg- followed by 8 or 17 hex digits); list the workers' security group IDs, comma separated`,
          });
        } else securityGroupIds = items;
      }
    }
    if (!region || !subnetId || !vpcId || !securityGroupIds) return undefined;
    return { amiId: ctx.value('PODVM_AMI_ID') ?? '', region, subnetId, vpcId, securityGroupIds };
  },
};
