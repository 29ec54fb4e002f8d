import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ConfigMap, Secret } from '../../src/kube/resources.ts';
import { formatProblems, PEER_PODS_DEFAULTS, parseGoDuration, validatePeerPodsConfig } from '../../src/peerpods/config.ts';

const NS = 'openshift-sandboxed-containers-operator';
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** The documented ConfigMap (docs/peerpods.md) with its placeholders filled in. */
const goodData = (): Record<string, string> => ({
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PROXY_TIMEOUT: '5m',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't2.small,t2.medium,t3.large',
  PODVM_AMI_ID: '',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0123456789abcdef0',
  AWS_VPC_ID: 'vpc-0123456789abcdef0',
  AWS_SG_IDS: 'sg-0123456789abcdef0,sg-0fedcba9876543210',
  TAGS: 'key1=value1,key2=value2',
  PEERPODS_LIMIT_PER_NODE: '10',
  ROOT_VOLUME_SIZE: '6',
  DISABLECVM: 'true',
});

const SECRET_ID = 'AKIAEXAMPLEKEYID0000';
const SECRET_KEY = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

const cmOf = (data: Record<string, string>): ConfigMap => ({ metadata: { name: 'peer-pods-cm', namespace: NS }, data });
const secretOf = (data: Record<string, string>): Secret => ({
  metadata: { name: 'peer-pods-secret', namespace: NS },
  type: 'Opaque',
  data,
});
const goodSecret = () => secretOf({ AWS_ACCESS_KEY_ID: b64(SECRET_ID), AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) });

function withData(change: Record<string, string | null>): ConfigMap {
  const data = goodData();
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete data[k];
    else data[k] = v;
  }
  return cmOf(data);
}

describe('validatePeerPodsConfig: a good configuration', () => {
  test('the documented ConfigMap gives a typed config', () => {
    const r = validatePeerPodsConfig(cmOf(goodData()), goodSecret());
    assert.deepEqual(r.problems, []);
    assert.ok(r.config);
    assert.deepEqual(
      { ...r.config, data: undefined },
      {
        cloudProvider: 'aws',
        vxlanPort: 9000,
        proxyTimeout: '5m',
        proxyTimeoutMs: 300_000,
        instanceType: 't3.medium',
        instanceTypes: ['t2.small', 't2.medium', 't3.large'],
        allowedInstanceTypes: ['t2.small', 't2.medium', 't3.large', 't3.medium'],
        amiId: '',
        region: 'us-east-2',
        subnetId: 'subnet-0123456789abcdef0',
        vpcId: 'vpc-0123456789abcdef0',
        securityGroupIds: ['sg-0123456789abcdef0', 'sg-0fedcba9876543210'],
        tags: { key1: 'value1', key2: 'value2' },
        limitPerNode: 10,
        rootVolumeSizeGB: 6,
        disableCVM: true,
        secretKeys: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'],
        data: undefined,
      },
    );
    assert.deepEqual(r.config.data, goodData());
    // The documented example's default type is not in its own list: allowed, but said.
    assert.deepEqual(r.warnings, [
      {
        key: 'PODVM_INSTANCE_TYPE',
        message:
          'PODVM_INSTANCE_TYPE t3.medium is not in PODVM_INSTANCE_TYPES (t2.small,t2.medium,t3.large); pods may use it anyway, as the default',
      },
    ]);
  });

  test('only the required keys: defaults are applied', () => {
    const cm = cmOf({
      CLOUD_PROVIDER: 'aws',
      AWS_REGION: 'eu-central-1',
      AWS_SUBNET_ID: 'subnet-01234567',
      AWS_VPC_ID: 'vpc-89abcdef',
      AWS_SG_IDS: 'sg-01234567',
    });
    const r = validatePeerPodsConfig(cm, goodSecret());
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.warnings, []);
    const c = r.config!;
    assert.equal(c.vxlanPort, PEER_PODS_DEFAULTS.VXLAN_PORT);
    assert.equal(c.vxlanPort, 9000);
    assert.equal(c.proxyTimeout, '5m');
    assert.equal(c.instanceType, 't3.medium');
    assert.deepEqual(c.instanceTypes, []);
    assert.deepEqual(c.allowedInstanceTypes, ['t3.medium']);
    assert.equal(c.amiId, '');
    assert.deepEqual(c.tags, {});
    assert.equal(c.limitPerNode, 10);
    assert.equal(c.rootVolumeSizeGB, 6);
    assert.equal(c.disableCVM, true);
  });

  test('values are typed', () => {
    const r = validatePeerPodsConfig(
      withData({
        VXLAN_PORT: '4789',
        PROXY_TIMEOUT: '1h30m',
        PODVM_AMI_ID: 'ami-0123456789abcdef0',
        PEERPODS_LIMIT_PER_NODE: '25',
        ROOT_VOLUME_SIZE: '30',
        DISABLECVM: 'false',
        TAGS: 'team=a=b,cost-center=',
        PODVM_INSTANCE_TYPES: 't3.medium,m5.large',
      }),
      goodSecret(),
    );
    assert.deepEqual(r.problems, []);
    const c = r.config!;
    assert.equal(c.vxlanPort, 4789);
    assert.equal(c.proxyTimeoutMs, 5_400_000);
    assert.equal(c.amiId, 'ami-0123456789abcdef0');
    assert.equal(c.limitPerNode, 25);
    assert.equal(c.rootVolumeSizeGB, 30);
    assert.equal(c.disableCVM, false);
    assert.deepEqual(c.tags, { team: 'a=b', 'cost-center': '' });
    assert.deepEqual(c.allowedInstanceTypes, ['t3.medium', 'm5.large']);
    assert.deepEqual(r.warnings, [
      {
        key: 'VXLAN_PORT',
        message: 'VXLAN_PORT is 4789: the documented procedure opens port 9000 in the security groups; open port 4789 (tcp) instead',
      },
    ]);
  });

  test('the Secret may use stringData, and may hold AWS_SESSION_TOKEN', () => {
    const secret: Secret = {
      metadata: { name: 'peer-pods-secret', namespace: NS },
      stringData: { AWS_ACCESS_KEY_ID: SECRET_ID, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_SESSION_TOKEN: 'tok' },
    };
    const r = validatePeerPodsConfig(cmOf(goodData()), secret);
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.config?.secretKeys, ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']);
  });

  test('a key that looks misspelt is a warning, other unknown keys are ignored', () => {
    const r = validatePeerPodsConfig(
      withData({ PODVM_INSTANCE_TYP: 't3.small', INIT_DATA: 'x', USE_PUBLIC_IP: 'true', SOMETHING_ELSE: 'x' }),
      goodSecret(),
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.warnings.filter((w) => w.key !== 'PODVM_INSTANCE_TYPE'),
      [
        {
          key: 'PODVM_INSTANCE_TYP',
          message: 'PODVM_INSTANCE_TYP is not a peer pods setting and is ignored; did you mean PODVM_INSTANCE_TYPE?',
        },
        { key: 'INIT_DATA', message: 'INIT_DATA is not a peer pods setting and is ignored; did you mean INITDATA?' },
      ],
    );
  });
});

/** Bad ConfigMaps, each with the one problem it must produce. */
const badConfigMaps: { name: string; change: Record<string, string | null>; key: string; message: string }[] = [
  {
    name: 'CLOUD_PROVIDER missing',
    change: { CLOUD_PROVIDER: null },
    key: 'CLOUD_PROVIDER',
    message: 'CLOUD_PROVIDER is missing from ConfigMap peer-pods-cm: it is required; set it to "aws"',
  },
  {
    name: 'CLOUD_PROVIDER unknown',
    change: { CLOUD_PROVIDER: 'openstack' },
    key: 'CLOUD_PROVIDER',
    message: 'CLOUD_PROVIDER is "openstack": it is not a known cloud provider; set it to "aws"',
  },
  {
    name: 'CLOUD_PROVIDER in upper case',
    change: { CLOUD_PROVIDER: 'AWS' },
    key: 'CLOUD_PROVIDER',
    message: 'CLOUD_PROVIDER is "AWS": provider names are lower case; set it to "aws"',
  },
  {
    name: 'CLOUD_PROVIDER a cloud the adaptor has and osc does not drive',
    change: { CLOUD_PROVIDER: 'libvirt' },
    key: 'CLOUD_PROVIDER',
    message:
      'CLOUD_PROVIDER is "libvirt": this operator supports only "aws", "azure" and "gcp" peer pods so far; run the cluster on one of those clouds and set it to its name',
  },
  {
    name: 'CLOUD_PROVIDER with a trailing space',
    change: { CLOUD_PROVIDER: 'aws ' },
    key: 'CLOUD_PROVIDER',
    message: 'CLOUD_PROVIDER is "aws ": it has leading or trailing spaces; remove them',
  },
  {
    name: 'VXLAN_PORT zero',
    change: { VXLAN_PORT: '0' },
    key: 'VXLAN_PORT',
    message: 'VXLAN_PORT is "0": it must be a port number from 1 to 65535; set it to 9000 as documented',
  },
  {
    name: 'VXLAN_PORT too large',
    change: { VXLAN_PORT: '70000' },
    key: 'VXLAN_PORT',
    message: 'VXLAN_PORT is "70000": it must be a port number from 1 to 65535; set it to 9000 as documented',
  },
  {
    name: 'VXLAN_PORT not a number',
    change: { VXLAN_PORT: 'vxlan' },
    key: 'VXLAN_PORT',
    message: 'VXLAN_PORT is "vxlan": it must be a port number from 1 to 65535; set it to 9000 as documented',
  },
  {
    name: 'VXLAN_PORT the agent port',
    change: { VXLAN_PORT: '15150' },
    key: 'VXLAN_PORT',
    message: 'VXLAN_PORT is "15150": port 15150 is the Kata agent\'s port in the pod VM; set it to 9000 as documented',
  },
  {
    name: 'PROXY_TIMEOUT without a unit',
    change: { PROXY_TIMEOUT: '5' },
    key: 'PROXY_TIMEOUT',
    message: 'PROXY_TIMEOUT is "5": it is not a duration (a number needs a unit); write it like 5m, 30s or 1h30m',
  },
  {
    name: 'PROXY_TIMEOUT in words',
    change: { PROXY_TIMEOUT: '5 minutes' },
    key: 'PROXY_TIMEOUT',
    message: 'PROXY_TIMEOUT is "5 minutes": it is not a duration; write it like 5m, 30s or 1h30m',
  },
  {
    name: 'PROXY_TIMEOUT negative',
    change: { PROXY_TIMEOUT: '-5m' },
    key: 'PROXY_TIMEOUT',
    message: 'PROXY_TIMEOUT is "-5m": it must be longer than zero; set it to 5m as documented',
  },
  {
    name: 'PODVM_INSTANCE_TYPE not a type name',
    change: { PODVM_INSTANCE_TYPE: 'medium' },
    key: 'PODVM_INSTANCE_TYPE',
    message: 'PODVM_INSTANCE_TYPE is "medium": it is not an AWS instance type name (like t3.medium); set it to one',
  },
  {
    name: 'PODVM_INSTANCE_TYPES with spaces',
    change: { PODVM_INSTANCE_TYPES: 't2.small, t2.medium' },
    key: 'PODVM_INSTANCE_TYPES',
    message: 'PODVM_INSTANCE_TYPES is "t2.small, t2.medium": the list must not contain spaces; write it as t3.small,t3.medium,t3.large',
  },
  {
    name: 'PODVM_INSTANCE_TYPES with an empty item',
    change: { PODVM_INSTANCE_TYPES: 't2.small,,t2.medium' },
    key: 'PODVM_INSTANCE_TYPES',
    message:
      'PODVM_INSTANCE_TYPES is "t2.small,,t2.medium": it has an empty item (a leading, trailing or doubled comma); write it as t3.small,t3.medium,t3.large',
  },
  {
    name: 'PODVM_INSTANCE_TYPES with a trailing comma',
    change: { PODVM_INSTANCE_TYPES: 't2.small,' },
    key: 'PODVM_INSTANCE_TYPES',
    message:
      'PODVM_INSTANCE_TYPES is "t2.small,": it has an empty item (a leading, trailing or doubled comma); write it as t3.small,t3.medium,t3.large',
  },
  {
    name: 'PODVM_INSTANCE_TYPES with a duplicate',
    change: { PODVM_INSTANCE_TYPES: 't2.small,t2.small' },
    key: 'PODVM_INSTANCE_TYPES',
    message: 'PODVM_INSTANCE_TYPES is "t2.small,t2.small": instance type "t2.small" is listed twice; list each once',
  },
  {
    name: 'PODVM_INSTANCE_TYPES with a bad name',
    change: { PODVM_INSTANCE_TYPES: 't2.small;t2.medium' },
    key: 'PODVM_INSTANCE_TYPES',
    message:
      'PODVM_INSTANCE_TYPES is "t2.small;t2.medium": "t2.small;t2.medium" is not an AWS instance type name (like t3.medium); list instance types, comma separated, without spaces',
  },
  {
    name: 'PODVM_AMI_ID left as the placeholder',
    change: { PODVM_AMI_ID: '<podvm_ami_id>' },
    key: 'PODVM_AMI_ID',
    message:
      'PODVM_AMI_ID is "<podvm_ami_id>", the placeholder from the example: set it to your own AMI ID, or to "" to have the operator build the pod VM image',
  },
  {
    name: 'PODVM_AMI_ID not an AMI ID',
    change: { PODVM_AMI_ID: 'rhel9-podvm' },
    key: 'PODVM_AMI_ID',
    message:
      'PODVM_AMI_ID is "rhel9-podvm": it is not an AMI ID (ami- followed by 8 or 17 hex digits); set it to your AMI ID, or to "" to have the operator build the pod VM image',
  },
  {
    name: 'AWS_REGION missing',
    change: { AWS_REGION: null },
    key: 'AWS_REGION',
    message:
      "AWS_REGION is missing from ConfigMap peer-pods-cm: it is required for aws; set it to the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.aws.region}')",
  },
  {
    name: 'AWS_REGION empty',
    change: { AWS_REGION: '' },
    key: 'AWS_REGION',
    message:
      "AWS_REGION is empty in ConfigMap peer-pods-cm: it is required for aws; set it to the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.aws.region}')",
  },
  {
    name: 'AWS_REGION left as the placeholder',
    change: { AWS_REGION: '<aws_region>' },
    key: 'AWS_REGION',
    message:
      "AWS_REGION is \"<aws_region>\", the placeholder from the example: replace it with the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.aws.region}')",
  },
  {
    name: 'AWS_REGION an availability zone',
    change: { AWS_REGION: 'us-east-2a' },
    key: 'AWS_REGION',
    message:
      "AWS_REGION is \"us-east-2a\": it is not an AWS region name (like us-east-1); set it to the cluster's region (oc get infrastructure/cluster -o jsonpath='{.status.platformStatus.aws.region}')",
  },
  {
    name: 'AWS_SUBNET_ID missing',
    change: { AWS_SUBNET_ID: null },
    key: 'AWS_SUBNET_ID',
    message:
      "AWS_SUBNET_ID is missing from ConfigMap peer-pods-cm: it is required for aws; set it to a worker's subnet (aws ec2 describe-instances --instance-ids <worker instance id> --query 'Reservations[*].Instances[*].SubnetId')",
  },
  {
    name: 'AWS_SUBNET_ID malformed',
    change: { AWS_SUBNET_ID: 'subnet-xyz' },
    key: 'AWS_SUBNET_ID',
    message:
      'AWS_SUBNET_ID is "subnet-xyz": it is not a subnet ID (subnet- followed by 8 or 17 hex digits); set it to a worker\'s subnet ID',
  },
  {
    name: 'AWS_VPC_ID missing',
    change: { AWS_VPC_ID: null },
    key: 'AWS_VPC_ID',
    message:
      "AWS_VPC_ID is missing from ConfigMap peer-pods-cm: it is required for aws; set it to a worker's VPC (aws ec2 describe-instances --instance-ids <worker instance id> --query 'Reservations[*].Instances[*].VpcId')",
  },
  {
    name: 'AWS_VPC_ID is a subnet',
    change: { AWS_VPC_ID: 'subnet-0123456789abcdef0' },
    key: 'AWS_VPC_ID',
    message:
      'AWS_VPC_ID is "subnet-0123456789abcdef0": it is not a VPC ID (vpc- followed by 8 or 17 hex digits); set it to the workers\' VPC ID',
  },
  {
    name: 'AWS_SG_IDS missing',
    change: { AWS_SG_IDS: null },
    key: 'AWS_SG_IDS',
    message:
      "AWS_SG_IDS is missing from ConfigMap peer-pods-cm: it is required for aws; set it to a worker's security groups, comma separated (aws ec2 describe-instances --instance-ids <worker instance id> --query 'Reservations[*].Instances[*].SecurityGroups[*].GroupId')",
  },
  {
    name: 'AWS_SG_IDS with spaces',
    change: { AWS_SG_IDS: 'sg-0123456789abcdef0, sg-0fedcba9876543210' },
    key: 'AWS_SG_IDS',
    message:
      'AWS_SG_IDS is "sg-0123456789abcdef0, sg-0fedcba9876543210": the list must not contain spaces; write it as sg-0123456789abcdef0,sg-0fedcba9876543210',
  },
  {
    name: 'AWS_SG_IDS with a bad item',
    change: { AWS_SG_IDS: 'sg-0123456789abcdef0,default' },
    key: 'AWS_SG_IDS',
    message:
      'AWS_SG_IDS is "sg-0123456789abcdef0,default": "default" is not a security group ID (sg- followed by 8 or 17 hex digits); list the workers\' security group IDs, comma separated',
  },
  {
    name: 'TAGS with a colon',
    change: { TAGS: 'key1:value1' },
    key: 'TAGS',
    message: 'TAGS is "key1:value1": "key1:value1" has no "=" (use = between key and value, not :); write tags as key1=value1,key2=value2',
  },
  {
    name: 'TAGS with an empty key',
    change: { TAGS: '=value1' },
    key: 'TAGS',
    message: 'TAGS is "=value1": "=value1" has an empty key; write tags as key1=value1,key2=value2',
  },
  {
    name: 'TAGS with a trailing comma',
    change: { TAGS: 'key1=value1,' },
    key: 'TAGS',
    message: 'TAGS is "key1=value1,": it has an empty item (a leading, trailing or doubled comma); write tags as key1=value1,key2=value2',
  },
  {
    name: 'TAGS with a duplicate key',
    change: { TAGS: 'k=1,k=2' },
    key: 'TAGS',
    message: 'TAGS is "k=1,k=2": the key "k" is given twice; write tags as key1=value1,key2=value2',
  },
  {
    name: 'TAGS with a reserved key',
    change: { TAGS: 'aws:owner=me' },
    key: 'TAGS',
    message: 'TAGS is "aws:owner=me": the key "aws:owner" starts with aws:, which AWS reserves; write tags as key1=value1,key2=value2',
  },
  {
    name: 'TAGS setting Name',
    change: { TAGS: 'Name=mine' },
    key: 'TAGS',
    message: 'TAGS is "Name=mine": the key Name is set by the operator for each pod VM; write tags as key1=value1,key2=value2',
  },
  {
    name: 'PEERPODS_LIMIT_PER_NODE zero',
    change: { PEERPODS_LIMIT_PER_NODE: '0' },
    key: 'PEERPODS_LIMIT_PER_NODE',
    message: 'PEERPODS_LIMIT_PER_NODE is "0": it must be a whole number of pod VMs per node, 1 or more; set it to 10 (the default) or more',
  },
  {
    name: 'PEERPODS_LIMIT_PER_NODE negative',
    change: { PEERPODS_LIMIT_PER_NODE: '-1' },
    key: 'PEERPODS_LIMIT_PER_NODE',
    message:
      'PEERPODS_LIMIT_PER_NODE is "-1": it must be a whole number of pod VMs per node, 1 or more; set it to 10 (the default) or more',
  },
  {
    name: 'PEERPODS_LIMIT_PER_NODE fractional',
    change: { PEERPODS_LIMIT_PER_NODE: '2.5' },
    key: 'PEERPODS_LIMIT_PER_NODE',
    message:
      'PEERPODS_LIMIT_PER_NODE is "2.5": it must be a whole number of pod VMs per node, 1 or more; set it to 10 (the default) or more',
  },
  {
    name: 'ROOT_VOLUME_SIZE below the minimum',
    change: { ROOT_VOLUME_SIZE: '4' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more',
  },
  {
    name: 'ROOT_VOLUME_SIZE with a unit',
    change: { ROOT_VOLUME_SIZE: '10Gi' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "10Gi": it must be a whole number of GB without a unit; set it to 6 or more',
  },
  {
    name: 'ROOT_VOLUME_SIZE not a number',
    change: { ROOT_VOLUME_SIZE: 'big' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "big": it must be a whole number of GB; set it to 6 or more',
  },
  {
    name: 'ROOT_VOLUME_SIZE above the largest EBS volume',
    change: { ROOT_VOLUME_SIZE: '20000' },
    key: 'ROOT_VOLUME_SIZE',
    message: 'ROOT_VOLUME_SIZE is "20000": the maximum is 16384 (GB, the largest EBS volume); set it to 16384 or less',
  },
  {
    name: 'DISABLECVM not a boolean',
    change: { DISABLECVM: 'yes' },
    key: 'DISABLECVM',
    message: 'DISABLECVM is "yes": it must be true or false; set it to "true" as documented',
  },
];

describe('validatePeerPodsConfig: bad ConfigMaps', () => {
  for (const bad of badConfigMaps) {
    test(bad.name, () => {
      const r = validatePeerPodsConfig(withData(bad.change), goodSecret());
      assert.deepEqual(r.problems, [{ key: bad.key, message: bad.message }]);
      assert.equal(r.config, undefined, 'no config when there is a problem');
      assert.ok(bad.message.startsWith(bad.key), 'the message names the key first');
    });
  }

  test('several problems are all reported, in key order of the documentation', () => {
    const r = validatePeerPodsConfig(withData({ ROOT_VOLUME_SIZE: '4', VXLAN_PORT: '0', AWS_REGION: null }), goodSecret());
    assert.deepEqual(
      r.problems.map((p) => p.key),
      ['VXLAN_PORT', 'AWS_REGION', 'ROOT_VOLUME_SIZE'],
    );
  });

  test('a long value is shortened and a line break escaped in messages', () => {
    const r = validatePeerPodsConfig(withData({ DISABLECVM: `${'x'.repeat(100)}` }), goodSecret());
    assert.equal(r.problems[0]?.message, `DISABLECVM is "${'x'.repeat(64)}...": it must be true or false; set it to "true" as documented`);
    const r2 = validatePeerPodsConfig(withData({ VXLAN_PORT: '9000\n' }), goodSecret());
    assert.equal(r2.problems[0]?.message, 'VXLAN_PORT is "9000\\n": it has leading or trailing spaces; remove them');
  });

  test('with no provider, the aws keys are not asked for', () => {
    const r = validatePeerPodsConfig(cmOf({ CLOUD_PROVIDER: 'openstack' }), goodSecret());
    assert.deepEqual(
      r.problems.map((p) => p.key),
      ['CLOUD_PROVIDER'],
    );
  });
});

describe('validatePeerPodsConfig: missing objects and the Secret', () => {
  test('a missing ConfigMap names it and its namespace', () => {
    const r = validatePeerPodsConfig(undefined, goodSecret());
    assert.deepEqual(r.problems, [
      {
        key: 'peer-pods-cm',
        message:
          'ConfigMap peer-pods-cm not found in namespace openshift-sandboxed-containers-operator: peer pods need it; create it as documented (oc create -f peer-pods-cm.yaml) with at least CLOUD_PROVIDER, AWS_REGION, AWS_SUBNET_ID, AWS_VPC_ID and AWS_SG_IDS',
      },
    ]);
    assert.equal(r.config, undefined);
  });

  test('a missing Secret names it and its namespace', () => {
    const r = validatePeerPodsConfig(cmOf(goodData()), undefined);
    assert.deepEqual(r.problems, [
      {
        key: 'peer-pods-secret',
        message:
          'Secret peer-pods-secret not found in namespace openshift-sandboxed-containers-operator: peer pods on aws need AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; create it with oc create secret generic peer-pods-secret -n openshift-sandboxed-containers-operator --from-literal AWS_ACCESS_KEY_ID=<id> --from-literal AWS_SECRET_ACCESS_KEY=<key>',
      },
    ]);
  });

  test('both missing: both reported', () => {
    const r = validatePeerPodsConfig(undefined, undefined);
    assert.deepEqual(
      r.problems.map((p) => p.key),
      ['peer-pods-cm', 'peer-pods-secret'],
    );
  });

  const badSecrets: { name: string; secret: Secret; key: string; message: string }[] = [
    {
      name: 'no access key id',
      secret: secretOf({ AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) }),
      key: 'AWS_ACCESS_KEY_ID',
      message:
        'AWS_ACCESS_KEY_ID is missing in Secret peer-pods-secret: it is required for aws; set it to the AWS access key ID the pod VMs are created with',
    },
    {
      name: 'empty secret access key',
      secret: secretOf({ AWS_ACCESS_KEY_ID: b64(SECRET_ID), AWS_SECRET_ACCESS_KEY: '' }),
      key: 'AWS_SECRET_ACCESS_KEY',
      message:
        'AWS_SECRET_ACCESS_KEY is empty in Secret peer-pods-secret: it is required for aws; set it to the AWS secret access key the pod VMs are created with',
    },
    {
      name: 'a value that is not base64',
      secret: secretOf({ AWS_ACCESS_KEY_ID: SECRET_ID.replace('0000', '0!!0'), AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) }),
      key: 'AWS_ACCESS_KEY_ID',
      message:
        'AWS_ACCESS_KEY_ID in Secret peer-pods-secret is not valid base64 (values under data must be base64-encoded); recreate the Secret with oc create secret generic --from-literal, or put the value under stringData',
    },
    {
      name: 'a value encoded with a trailing newline',
      secret: secretOf({ AWS_ACCESS_KEY_ID: b64(SECRET_ID), AWS_SECRET_ACCESS_KEY: b64(`${SECRET_KEY}\n`) }),
      key: 'AWS_SECRET_ACCESS_KEY',
      message:
        'AWS_SECRET_ACCESS_KEY in Secret peer-pods-secret ends with a line break (was it encoded with echo instead of echo -n?); store the value without it',
    },
    {
      name: 'a value with spaces',
      secret: secretOf({ AWS_ACCESS_KEY_ID: b64(` ${SECRET_ID}`), AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) }),
      key: 'AWS_ACCESS_KEY_ID',
      message: 'AWS_ACCESS_KEY_ID in Secret peer-pods-secret has leading or trailing spaces; store the value without them',
    },
    {
      name: 'a placeholder left in',
      secret: secretOf({ AWS_ACCESS_KEY_ID: b64('<id>'), AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) }),
      key: 'AWS_ACCESS_KEY_ID',
      message: 'AWS_ACCESS_KEY_ID in Secret peer-pods-secret still holds a placeholder like <id>; store the real value',
    },
  ];
  for (const bad of badSecrets) {
    test(`bad Secret: ${bad.name}`, () => {
      const r = validatePeerPodsConfig(cmOf(goodData()), bad.secret);
      assert.deepEqual(r.problems, [{ key: bad.key, message: bad.message }]);
      assert.equal(r.config, undefined);
    });
  }

  test('secret values never appear in messages or the config', () => {
    const secrets = [
      secretOf({ AWS_ACCESS_KEY_ID: b64(`${SECRET_ID}\n`), AWS_SECRET_ACCESS_KEY: b64(` ${SECRET_KEY}`) }),
      secretOf({ AWS_ACCESS_KEY_ID: b64(SECRET_ID), AWS_SECRET_ACCESS_KEY: b64(SECRET_KEY) }),
    ];
    for (const s of secrets) {
      const r = validatePeerPodsConfig(cmOf(goodData()), s);
      const all = JSON.stringify(r);
      assert.ok(!all.includes(SECRET_ID), 'no access key id');
      assert.ok(!all.includes(SECRET_KEY), 'no secret key');
      assert.ok(!all.includes(b64(SECRET_KEY)), 'not even encoded');
    }
  });
});

describe('formatProblems', () => {
  test('empty for no problem', () => {
    assert.equal(formatProblems([]), '');
  });
  test('one problem', () => {
    assert.equal(
      formatProblems([{ key: 'ROOT_VOLUME_SIZE', message: 'ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more' }]),
      'Invalid peer pods configuration: ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more.',
    );
  });
  test('several problems on one line', () => {
    const r = validatePeerPodsConfig(withData({ ROOT_VOLUME_SIZE: '4', VXLAN_PORT: '0' }), goodSecret());
    const line = formatProblems(r.problems);
    assert.equal(
      line,
      'Invalid peer pods configuration (2 problems): VXLAN_PORT is "0": it must be a port number from 1 to 65535; set it to 9000 as documented. ' +
        'ROOT_VOLUME_SIZE is "4": the minimum is 6 (GB); set it to 6 or more.',
    );
    assert.ok(!line.includes('\n'));
  });
  test('line breaks inside a message are flattened', () => {
    assert.equal(formatProblems([{ key: 'X', message: 'a\nb' }]), 'Invalid peer pods configuration: a b.');
  });
});

describe('parseGoDuration', () => {
  const cases: [string, number | undefined][] = [
    ['5m', 300_000],
    ['30s', 30_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['0', 0],
    ['-1m', -60_000],
    ['5', undefined],
    ['', undefined],
    ['5 m', undefined],
    ['1d', undefined],
    ['m', undefined],
  ];
  for (const [text, ms] of cases) {
    test(JSON.stringify(text), () => assert.equal(parseGoDuration(text), ms));
  }
});
