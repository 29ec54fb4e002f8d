/**
 * No secret value anywhere a user or support reads: after a peer-pods run with known AWS keys in
 * peer-pods-secret (valid, then a key removed and restored, a kata-remote pod admitted), the operator's
 * log at debug level, every event, the KataConfig status, /metrics and a must-gather archive are grepped
 * for the values, plain and base64.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, describe, test } from 'node:test';
import { x as extract } from 'tar';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { CAA_DAEMONSET, OPERATOR_NAMESPACE, PEER_PODS_CM } from '../../src/api/names.ts';
import { ConfigMaps, DaemonSets, Events, Pods, Secrets } from '../../src/kube/resources.ts';
import { createLogger } from '../../src/runtime/log.ts';
import { runOsc } from '../support/cli.ts';
import { scrapeMetrics, startOperator, useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const NS = OPERATOR_NAMESPACE;
const ACCESS_KEY = 'AKIAOSCLEAKCHECK0042';
const SECRET_KEY = 'osc/Leak+Check/SecretAccessKey/0123456789';

const config: Record<string, string> = {
  CLOUD_PROVIDER: 'aws',
  VXLAN_PORT: '9000',
  PODVM_INSTANCE_TYPE: 't3.medium',
  PODVM_INSTANCE_TYPES: 't3.small,t3.medium',
  PODVM_AMI_ID: 'ami-0123456789abcdef0',
  AWS_REGION: 'us-east-2',
  AWS_SUBNET_ID: 'subnet-0a1b2c3d4e5f67890',
  AWS_VPC_ID: 'vpc-0a1b2c3d4e5f67890',
  AWS_SG_IDS: 'sg-0a1b2c3d4e5f67890',
  DISABLECVM: 'true',
};

/** Every form a value could leak in: as is, base64 (as in a Secret's data), and base64 of the pair file. */
function forbidden(): string[] {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return [ACCESS_KEY, SECRET_KEY, b64(ACCESS_KEY), b64(SECRET_KEY), JSON.stringify(SECRET_KEY).slice(1, -1)];
}

function leaks(where: string, text: string): string[] {
  return forbidden()
    .filter((v) => text.includes(v))
    .map((v) => `${where} contains ${v}`);
}

describe('no secret value in logs, events, status, metrics or must-gather', () => {
  const cluster = useDevCluster({
    workers: 1,
    platform: 'AWS',
    rebootMs: 300,
    awsUsers: [{ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY }],
  });
  const dir = mkdtempSync(join(tmpdir(), 'osc-leak-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a peer-pods run with known AWS keys leaves them nowhere', async () => {
    const c = cluster.dev.client;
    let log = '';
    const sink = new PassThrough();
    sink.on('data', (d: Buffer) => {
      log += d.toString();
    });
    const op = await startOperator(cluster.dev, { log: createLogger({ level: 'debug', destination: sink }) });
    try {
      await c.create(Secrets, {
        metadata: { name: 'peer-pods-secret', namespace: NS },
        stringData: { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY },
      });
      await c.create(ConfigMaps, { metadata: { name: PEER_PODS_CM, namespace: NS }, data: config });
      await c.create(KataConfigs, { metadata: { name: 'example-kataconfig' }, spec: { enablePeerPods: true } });
      const condition = (status: string, message?: RegExp) =>
        waitFor(
          async () => {
            const k = await c.get(KataConfigs, 'example-kataconfig');
            const v = k.status?.conditions?.find((x) => x.type === 'PeerPodsConfigValid');
            return v?.status === status && (!message || message.test(v.message)) ? k : undefined;
          },
          { message: `PeerPodsConfigValid ${status}` },
        );
      await condition('True');
      await waitFor(() => c.find(DaemonSets, CAA_DAEMONSET, NS), { message: 'the cloud-api-adaptor DaemonSet' });

      // A key removed (the status names it, not the other's value), then restored.
      await c.patch(Secrets, 'peer-pods-secret', { data: { AWS_SECRET_ACCESS_KEY: null } }, { namespace: NS });
      await condition('False', /AWS_SECRET_ACCESS_KEY/);
      await c.patch(Secrets, 'peer-pods-secret', { stringData: { AWS_SECRET_ACCESS_KEY: SECRET_KEY } }, { namespace: NS });
      await condition('True');

      // A kata-remote pod through the mutating webhook.
      await waitFor(async () => (await c.find(KataConfigs, 'example-kataconfig'))?.status?.runtimeClasses?.includes('kata-remote'), {
        timeoutMs: 120_000,
        message: 'kata-remote installed',
      });
      await c.create(Pods, {
        metadata: { name: 'leak-check', namespace: 'default' },
        spec: { runtimeClassName: 'kata-remote', containers: [{ name: 'c', image: 'quay.io/example/app:1' }] },
      } as never);

      // What a user or support reads.
      const found: string[] = [];
      const kc = await c.get(KataConfigs, 'example-kataconfig');
      assert.ok(kc.status?.conditions?.length, 'the status has conditions to check');
      found.push(...leaks('the KataConfig', JSON.stringify(kc)));
      const events = (await c.list(Events)).items;
      assert.ok(events.length > 0, 'events to check');
      found.push(...leaks('events', JSON.stringify(events)));
      const metrics = await scrapeMetrics(cluster.dev, op.operator);
      assert.equal(metrics.status, 200);
      assert.match(metrics.text, /^osc_peerpods_config_valid 1$/m);
      found.push(...leaks('/metrics', metrics.text));

      const dest = join(dir, 'gather');
      const r = await runOsc(['must-gather', '--dest-dir', dest, '--kubeconfig', cluster.dev.kubeconfigPath]);
      assert.equal(r.code, 0, r.stderr);
      found.push(...leaks('must-gather output', r.stdout + r.stderr));
      const archive = readdirSync(dest).find((f) => f.endsWith('.tar.gz'));
      assert.ok(archive, r.stdout);
      const out = join(dir, 'extracted');
      mkdirSync(out, { recursive: true });
      await extract({ file: join(dest, archive), cwd: out });
      const files = readdirSync(out, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      assert.ok(
        files.some((f) => f.name === 'secrets.yaml'),
        'the archive has the Secrets (redacted)',
      );
      for (const f of files) found.push(...leaks(`must-gather ${f.name}`, readFileSync(join(f.parentPath, f.name), 'utf8')));

      assert.match(log, /"level":"debug"/, 'the log is at debug level');
      assert.match(log, /peer/i, 'the log covers the peer pods run');
      for (const line of log.split('\n')) found.push(...leaks('a log line', line));
      assert.deepEqual(found, []);
    } finally {
      await op.stop();
    }
  });
});
