/**
 * The operator and must-gather images, built with Docker on a locally made base (no registry is reachable)
 * and run as containers against the dev cluster:
 *
 * - the operator image runs the way its Deployment runs it: the Deployment's arguments and environment, its
 *   ServiceAccount's token and the cluster CA mounted at the in-cluster paths (no kubeconfig), as a non-root
 *   user with a read-only root filesystem and no capabilities; on the host's network, so that it reaches the
 *   loopback API server. It installs kata through a KataConfig.
 * - the must-gather image runs its `gather` script as `oc adm must-gather --image=...` does: in-cluster
 *   credentials of a cluster-admin service account, writing into /must-gather.
 *
 * Skipped only with OSC_SKIP_IMAGE_TESTS=1. Needs root, docker.io and mmdebstrap (.ci/run installs them).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { KataConfigs } from '../../src/api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import { NAMES, packageVersion } from '../../src/install/manifests.ts';
import { Deployments, RuntimeClasses } from '../../src/kube/resources.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { runOsc } from '../support/cli.ts';
import { DockerEngine, importLocalBase, LOCAL_BASE_IMAGE, skipImages } from '../support/docker.ts';
import { useDevCluster } from '../support/operator.ts';
import { waitFor } from '../support/wait.ts';

const root = join(import.meta.dirname, '..', '..');
const ns = OPERATOR_NAMESPACE;
const OPERATOR_IMAGE = 'osc.local/osc-operator:e2e';
const MUST_GATHER_IMAGE = 'osc.local/osc-must-gather:e2e';
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const secs = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

interface Container {
  name: string;
  args: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext?: {
    readOnlyRootFilesystem?: boolean;
    runAsNonRoot?: boolean;
    allowPrivilegeEscalation?: boolean;
    capabilities?: { drop?: string[] };
  };
}
type DeploymentObject = KubeObject & {
  spec: { template: { spec: { serviceAccountName: string; securityContext?: { runAsNonRoot?: boolean }; containers: Container[] } } };
};

describe('images: operator and must-gather, built and run as containers', { skip: skipImages() }, () => {
  const cluster = useDevCluster({ workers: 2 });
  const dir = mkdtempSync(join(tmpdir(), 'osc-images-'));
  let engine: DockerEngine | undefined;
  const docker = () => {
    if (!engine) throw new Error('dockerd not started');
    return engine;
  };
  const kubectl = (args: string[], input?: string) => cluster.dev.controlPlane.kubectl(args, { input });

  /** The in-cluster credentials of a service account, as the kubelet mounts them (readable by any user). */
  async function serviceAccountDir(name: string, namespace: string): Promise<string> {
    const token = await kubectl(['create', 'token', name, '-n', namespace, '--duration=1h']);
    assert.equal(token.code, 0, token.stderr);
    const d = join(dir, `sa-${namespace}-${name}`);
    mkdirSync(d, { recursive: true, mode: 0o755 });
    writeFileSync(join(d, 'token'), token.stdout.trim(), { mode: 0o644 });
    writeFileSync(join(d, 'ca.crt'), cluster.dev.controlPlane.caPem, { mode: 0o644 });
    writeFileSync(join(d, 'namespace'), namespace, { mode: 0o644 });
    return d;
  }
  /** What the kubelet puts in every container's environment to find the API server. */
  const apiServerEnv = () => {
    const url = new URL(cluster.dev.controlPlane.apiserverUrl);
    return ['-e', `KUBERNETES_SERVICE_HOST=${url.hostname}`, '-e', `KUBERNETES_SERVICE_PORT=${url.port}`];
  };

  before(async () => {
    engine = await DockerEngine.start();
  });
  after(async () => {
    if (engine) {
      await engine.docker(['rm', '-f', 'osc-operator-e2e']);
      await engine.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  test('a base image made locally from Debian packages and the project Node 24', async () => {
    const t0 = Date.now();
    const base = await importLocalBase(docker());
    console.log(`# base image ${base.image}: ${await docker().imageSizeMiB(base.image)} MiB, made/imported in ${secs(Date.now() - t0)}`);
    const node = await docker().must(['run', '--rm', '--network', 'none', base.image, 'node', '--version']);
    assert.match(node.trim(), /^v24\./, 'Node 24, from the npm package node');
  });

  test('the operator image builds on the local base (NODE_IMAGE build argument)', async () => {
    const t0 = Date.now();
    await docker().must(['build', '--network', 'host', '--build-arg', `NODE_IMAGE=${LOCAL_BASE_IMAGE}`, '-t', OPERATOR_IMAGE, root], {
      timeoutMs: 30 * 60_000,
    });
    console.log(
      `# operator image ${OPERATOR_IMAGE}: ${await docker().imageSizeMiB(OPERATOR_IMAGE)} MiB, built in ${secs(Date.now() - t0)}`,
    );

    const config = JSON.parse(await docker().must(['image', 'inspect', '--format', '{{json .Config}}', OPERATOR_IMAGE])) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
    };
    assert.equal(config.User, '65532:65532', 'a numeric non-root user (runAsNonRoot can verify it)');
    assert.deepEqual(
      config.Entrypoint,
      ['node', '--lite-mode', '--max-semi-space-size=2', '--heap-growing-percent=50', '/app/bin/osc.js'],
      'Node with the V8 flags docs/performance.md explains',
    );
    assert.deepEqual(config.Cmd, ['run']);
    const version = await docker().must(['run', '--rm', '--network', 'none', '--read-only', OPERATOR_IMAGE, '--version']);
    assert.equal(version.trim(), packageVersion());
    // Only Node stays: no package manager in the runtime image.
    const npm = await docker().docker(['run', '--rm', '--network', 'none', '--entrypoint', 'sh', OPERATOR_IMAGE, '-c', 'command -v npm']);
    assert.notEqual(npm.code, 0, 'npm is not in the runtime image');
    // The dev cluster is left out: the operator never loads it, and `osc start` says it is missing.
    const devcluster = await docker().docker([
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'sh',
      OPERATOR_IMAGE,
      '-c',
      'ls /app/dist/devcluster',
    ]);
    assert.notEqual(devcluster.code, 0, 'no dist/devcluster in the runtime image');
    const start = await docker().docker(['run', '--rm', '--network', 'none', '--read-only', OPERATOR_IMAGE, 'start']);
    assert.equal(start.code, 1, start.stderr);
    assert.match(start.stderr, /no dev cluster \(the operator image leaves it out\)/);
    // The SBOM of exactly what the image's node_modules hold (npm ci from the lock file).
    const listing = await docker().must([
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'node',
      OPERATOR_IMAGE,
      '-e',
      'const fs=require("fs");const b=JSON.parse(fs.readFileSync("/app/sbom.cdx.json"));' +
        'const l=JSON.parse(fs.readFileSync("/app/node_modules/.package-lock.json"));' +
        'console.log(JSON.stringify({bom:b.components.map(c=>(c.group?c.group+"/":"")+c.name+"@"+c.version).sort(),' +
        'installed:[...new Set(Object.entries(l.packages).map(([p,v])=>p.split("node_modules/").pop()+"@"+v.version))].sort()}))',
    ]);
    const { bom, installed } = JSON.parse(listing) as { bom: string[]; installed: string[] };
    assert.ok(bom.length > 50, `${bom.length} packages in the SBOM`);
    assert.deepEqual(bom, installed, 'the SBOM lists exactly the installed packages');
  });

  test('the operator container runs as its Deployment does and installs kata', async () => {
    const installed = await runOsc(['install', '--kubeconfig', cluster.dev.kubeconfigPath, '--image', OPERATOR_IMAGE]);
    assert.equal(installed.code, 0, installed.stderr);
    const dep = (await cluster.dev.client.get(Deployments, NAMES.deployment, ns)) as DeploymentObject;
    const pod = dep.spec.template.spec;
    const c = pod.containers[0];
    assert.ok(c);
    assert.equal((c as unknown as { image: string }).image, OPERATOR_IMAGE);

    // The pod's security settings, in docker's words.
    const security: string[] = [];
    if (c.securityContext?.readOnlyRootFilesystem) security.push('--read-only');
    if (c.securityContext?.capabilities?.drop?.includes('ALL')) security.push('--cap-drop', 'ALL');
    if (c.securityContext?.allowPrivilegeEscalation === false) security.push('--security-opt', 'no-new-privileges');
    assert.deepEqual(security, ['--read-only', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges']);
    assert.ok(c.securityContext?.runAsNonRoot && pod.securityContext?.runAsNonRoot, 'the Deployment requires a non-root user');

    const env: string[] = [];
    for (const e of c.env ?? []) {
      // The downward API's values, as the kubelet would give them to this one pod.
      const fromPod: Record<string, string> = { 'metadata.namespace': ns, 'metadata.name': 'osc-controller-manager-e2e' };
      const fieldPath = e.valueFrom?.fieldRef?.fieldPath;
      const value = fieldPath ? fromPod[fieldPath] : e.value;
      assert.ok(value !== undefined, `env ${e.name} has a value the test knows`);
      env.push('-e', `${e.name}=${value}`);
    }
    // On the host's network the Deployment's fixed ports would collide: free loopback ports instead. No
    // Service routes to a container outside the cluster, so the webhooks are registered by URL.
    const args = c.args.map((a) => a.replace(/^(--(?:metrics|health-probe|webhook)-bind-address)=:\d+$/, '$1=127.0.0.1:0'));
    assert.deepEqual(args.slice(0, 2), ['run', '--leader-elect']);
    const sa = await serviceAccountDir(pod.serviceAccountName, ns);
    await docker().must([
      'run',
      '-d',
      '--name',
      'osc-operator-e2e',
      '--network',
      'host',
      ...security,
      ...apiServerEnv(),
      ...env,
      '-v',
      `${sa}:${SA_DIR}:ro`,
      OPERATOR_IMAGE,
      ...args,
      '--webhook-url',
      'https://127.0.0.1:{port}',
    ]);
    const logs = async () => {
      const r = await docker().docker(['logs', 'osc-operator-e2e']);
      return `${r.stdout}${r.stderr}`;
    };
    const running = async () => (await docker().must(['inspect', '--format', '{{.State.Running}}', 'osc-operator-e2e'])).trim() === 'true';
    await waitFor(async () => (await logs()).includes('"became leader"') || !(await running()), {
      timeoutMs: 120_000,
      intervalMs: 500,
      message: 'the operator container to lead',
    });
    assert.ok(await running(), `the operator container exited:\n${await logs()}`);
    const user = (await docker().must(['exec', 'osc-operator-e2e', 'sh', '-c', 'id -u; id -g'])).trim().split('\n');
    assert.deepEqual(user, ['65532', '65532']);
    const write = await docker().docker(['exec', 'osc-operator-e2e', 'sh', '-c', 'touch /app/x']);
    assert.notEqual(write.code, 0, 'the root filesystem is read-only');

    const created = await kubectl(
      ['create', '-f', '-'],
      'apiVersion: kataconfiguration.openshift.io/v1\nkind: KataConfig\nmetadata:\n  name: cluster-kataconfig\nspec:\n  checkNodeEligibility: false\n',
    );
    assert.equal(created.code, 0, created.stderr);
    const t0 = Date.now();
    await waitFor(
      async () => {
        const kc = await cluster.dev.client.get(KataConfigs, 'cluster-kataconfig');
        const done = kc.status?.conditions?.find((x) => x.type === 'InProgress')?.status === 'False';
        return done && kc.status?.kataNodes?.readyNodeCount === 2 && (await cluster.dev.client.find(RuntimeClasses, 'kata'));
      },
      { timeoutMs: 180_000, intervalMs: 250, message: 'kata installed on both workers by the operator container' },
    );
    console.log(`# kata installed by the operator container in ${secs(Date.now() - t0)}`);
    assert.equal((await cluster.dev.client.get(RuntimeClasses, 'kata')).handler, 'kata');
    const out = await logs();
    assert.doesNotMatch(out, /forbidden/i, 'no request of the operator was refused');
    assert.match(out, /"caches synced"/);

    await docker().must(['stop', '--time', '30', 'osc-operator-e2e']);
    const state = (await docker().must(['inspect', '--format', '{{.State.ExitCode}}', 'osc-operator-e2e'])).trim();
    assert.equal(state, '0', `the operator stops cleanly on SIGTERM:\n${(await logs()).slice(-2000)}`);
    assert.match(await logs(), /"operator stopped"/);
  });

  test('the OLM bundle image: the manifests and metadata, with the annotations as labels', async () => {
    await docker().must(['build', '-f', join(root, 'bundle', 'bundle.Dockerfile'), '-t', 'osc.local/osc-bundle:e2e', join(root, 'bundle')]);
    const labels = JSON.parse(
      await docker().must(['image', 'inspect', '--format', '{{json .Config.Labels}}', 'osc.local/osc-bundle:e2e']),
    ) as Record<string, string>;
    assert.equal(labels['operators.operatorframework.io.bundle.mediatype.v1'], 'registry+v1');
    assert.equal(labels['operators.operatorframework.io.bundle.package.v1'], 'sandboxed-containers-operator');
    assert.equal(labels['operators.operatorframework.io.bundle.channel.default.v1'], 'stable');
    // FROM scratch: read the files back through a container made (not run) from it.
    const id = (await docker().must(['create', 'osc.local/osc-bundle:e2e', 'none'])).trim();
    const listing = await docker()
      .must(['export', id])
      .catch(() => '');
    await docker().docker(['rm', id]);
    for (const f of ['manifests/sandboxed-containers-operator.clusterserviceversion.yaml', 'metadata/annotations.yaml']) {
      assert.ok(listing.includes(f), `${f} in the bundle image`);
    }
  });

  test('the must-gather image: its gather script writes the collection into /must-gather', async () => {
    let t0 = Date.now();
    await docker().must(['build', '--build-arg', `OSC_IMAGE=${OPERATOR_IMAGE}`, '-t', MUST_GATHER_IMAGE, join(root, 'must-gather')]);
    console.log(
      `# must-gather image ${MUST_GATHER_IMAGE}: ${await docker().imageSizeMiB(MUST_GATHER_IMAGE)} MiB, built in ${secs(Date.now() - t0)}`,
    );

    // What `oc adm must-gather` sets up: a temporary namespace, a service account bound to cluster-admin.
    const gatherNs = 'openshift-must-gather-e2e';
    for (const args of [
      ['create', 'namespace', gatherNs],
      ['create', 'serviceaccount', 'must-gather-admin', '-n', gatherNs],
      ['create', 'clusterrolebinding', 'must-gather-e2e', '--clusterrole=cluster-admin', `--serviceaccount=${gatherNs}:must-gather-admin`],
      ['create', 'secret', 'generic', 'peer-pods-secret', '-n', ns, '--from-literal=AWS_SECRET_ACCESS_KEY=osc-image-test-secret'],
    ]) {
      const r = await kubectl(args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    const sa = await serviceAccountDir('must-gather-admin', gatherNs);
    const out = join(dir, 'must-gather');
    mkdirSync(out);
    chmodSync(out, 0o777); // an emptyDir, writable by the image's user
    t0 = Date.now();
    const r = await docker().docker([
      'run',
      '--rm',
      '--network',
      'host',
      '--read-only',
      ...apiServerEnv(),
      '-v',
      `${sa}:${SA_DIR}:ro`,
      '-v',
      `${out}:/must-gather`,
      MUST_GATHER_IMAGE,
      '/usr/bin/gather',
    ]);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    console.log(`# must-gather container collected in ${secs(Date.now() - t0)}`);
    assert.match(r.stderr, /must-gather: written to \/must-gather/);

    const entries = readdirSync(out);
    assert.equal(entries.length, 1, `one collection and no leftovers: ${entries.join(', ')}`);
    const top = join(out, entries[0] ?? '');
    const read = (p: string) => readFileSync(join(top, p), 'utf8');
    assert.match(read('cluster-scoped/kataconfigs.yaml'), /name: cluster-kataconfig/);
    assert.match(read('cluster-scoped/kataconfigs.yaml'), /readyNodeCount: 2/);
    assert.match(read('cluster-scoped/nodes.yaml'), /node-role\.kubernetes\.io\/kata-oc: ""/);
    assert.match(read(`namespaces/${ns}/deployments.yaml`), /image: osc\.local\/osc-operator:e2e/);
    assert.match(read(`namespaces/${ns}/secrets.yaml`), /AWS_SECRET_ACCESS_KEY: REDACTED/);
    assert.match(read('summary.txt'), /KataConfig cluster-kataconfig: Installed/);
    const all = (d: string): string[] =>
      readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? all(join(d, e.name)) : [join(d, e.name)]));
    for (const f of all(top)) {
      const text = readFileSync(f, 'utf8');
      assert.ok(!text.includes('osc-image-test-secret') && !text.includes(Buffer.from('osc-image-test-secret').toString('base64')), f);
    }
  });
});
