/**
 * The packaging checked against a real kube-apiserver and a real helm: every manifest of the OLM bundle is
 * accepted by the API server (server-side dry run) where its kind is served, and so are the CSV's
 * Deployment and permissions as the objects OLM makes of them; `helm lint` accepts the chart and
 * `helm template` renders exactly the objects of `osc install --dry-run`, with default and with set values.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { OPERATOR_NAMESPACE } from '../../src/api/names.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import type { CSVSpec } from '../../src/packaging/olm.ts';
import { runOsc } from '../support/cli.ts';
import { useControlPlane } from '../support/controlplane.ts';
import { cachedBuild } from '../support/tools.ts';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const chart = join(root, 'charts', 'osc');
const ns = OPERATOR_NAMESPACE;
/** Kinds of the Prometheus Operator, which a plain cluster (and the dev cluster) may not serve. */
const MONITORING_KINDS = new Set(['ServiceMonitor', 'PodMonitor', 'PrometheusRule']);

const objectsOf = (text: string): KubeObject[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o);
const sortKey = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const sorted = (objs: KubeObject[]) => [...objs].sort((a, b) => sortKey(a).localeCompare(sortKey(b)));

/** helm from its pinned Go module (built once into the cache by tools/build-helm.sh). */
async function buildHelm(): Promise<string> {
  const t0 = Date.now();
  const helm = await cachedBuild(join(root, 'tools', 'build-helm.sh'));
  console.log(`# helm: ${helm} (${Date.now() - t0} ms)`);
  return helm;
}

describe('packaging against a real API server and a real helm', () => {
  const cluster = useControlPlane();
  let helm = '';
  const kubectl = (args: string[], input?: string) => cluster.cp.kubectl(args, { input });
  /** Whether the API server serves an object's apiVersion and kind (kubectl api-resources). */
  async function servedKinds(): Promise<(o: KubeObject) => boolean> {
    const r = await kubectl(['api-resources', '--no-headers']);
    assert.equal(r.code, 0, r.stderr);
    // NAME [SHORTNAMES] APIVERSION NAMESPACED KIND
    const served = new Set(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .map((cols) => `${cols.at(-3)} ${cols.at(-1)}`),
    );
    return (o) => served.has(`${o.apiVersion} ${o.kind}`);
  }

  before(async () => {
    helm = await buildHelm();
  });

  test('each bundle manifest is accepted by the API server (server-side dry run) where its kind is served', async () => {
    // Namespaced manifests need their namespace (a dry run creates nothing); OLM installs them there.
    assert.equal((await kubectl(['create', 'namespace', ns])).code, 0);
    const isServed = await servedKinds();
    const dir = join(root, 'bundle', 'manifests');
    const checked: string[] = [];
    const skipped: string[] = [];
    let csv: (KubeObject & { spec: CSVSpec }) | undefined;
    for (const file of readdirSync(dir).sort()) {
      const text = readFileSync(join(dir, file), 'utf8');
      const [obj] = objectsOf(text);
      assert.ok(obj, file);
      if (obj.kind === 'ClusterServiceVersion') csv = obj as KubeObject & { spec: CSVSpec };
      if (!isServed(obj)) {
        skipped.push(obj.kind ?? '');
        continue;
      }
      const r = await kubectl(['apply', '--server-side', '--dry-run=server', '--field-manager=olm', '-n', ns, '-f', '-'], text);
      assert.equal(r.code, 0, `${file}: ${r.stderr}`);
      checked.push(obj.kind ?? '');
    }
    // OLM is not installed here; the Prometheus Operator's kinds are served only where it runs.
    assert.deepEqual(
      skipped.filter((k) => !MONITORING_KINDS.has(k)),
      ['ClusterServiceVersion'],
    );
    if (skipped.length > 1) console.log(`# not served here, not dry-run: ${skipped.join(', ')}`);
    assert.ok(checked.includes('CustomResourceDefinition') && checked.includes('Service'), checked.join());

    // What OLM makes of the CSV: the Deployment, the ServiceAccount, a ClusterRole and a Role with the rules.
    assert.ok(csv);
    const strategy = csv.spec.install.spec;
    const sa = strategy.permissions[0]?.serviceAccountName ?? '';
    const made: KubeObject[] = [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: ns } },
      ...strategy.deployments.map(
        (d) =>
          ({
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: d.name, namespace: ns, labels: d.label },
            spec: d.spec,
          }) as KubeObject,
      ),
      ...strategy.clusterPermissions.map(
        (p, i) =>
          ({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: `csv-cluster-${i}` },
            rules: p.rules,
          }) as KubeObject,
      ),
      ...strategy.permissions.map(
        (p, i) =>
          ({
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name: `csv-${i}`, namespace: ns },
            rules: p.rules,
          }) as KubeObject,
      ),
    ];
    for (const o of made) {
      const r = await kubectl(['create', '--dry-run=server', '-o', 'name', '-f', '-'], stringify(o));
      assert.equal(r.code, 0, `${o.kind} ${o.metadata.name}: ${r.stderr}`);
    }
    // The related images are the one the Deployment runs and the operands' it is given (RELATED_IMAGE_*).
    const images = strategy.deployments.flatMap((d) =>
      (
        d.spec as { template: { spec: { containers: { image: string; env?: { name: string; value?: string }[] }[] } } }
      ).template.spec.containers.flatMap((c) => [
        c.image,
        ...(c.env ?? []).filter((e) => e.name.startsWith('RELATED_IMAGE_')).map((e) => e.value ?? ''),
      ]),
    );
    assert.deepEqual(
      csv.spec.relatedImages.map((r) => r.image),
      images,
    );
  });

  test('helm lint accepts the chart; a bad value is refused by name', async () => {
    const ok = await run(helm, ['lint', '--strict', chart]);
    assert.match(ok.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const bad = await run(helm, ['lint', chart, '--set', 'logLevel=loud']).catch((e: { stdout: string; stderr: string }) => e);
    assert.match(`${bad.stdout}${bad.stderr}`, /logLevel/);
    assert.match(`${bad.stdout}${bad.stderr}`, /1 chart\(s\) failed/);
  });

  test('helm template renders exactly the objects of osc install --dry-run, for each distribution (default and set values)', async () => {
    const cases: { helm: string[]; osc: string[] }[] = [
      // The chart's default distribution is plain Kubernetes; osc install's is OpenShift.
      { helm: [], osc: ['--distribution', 'kubernetes'] },
      { helm: ['--set', 'distribution=openshift'], osc: [] },
      {
        helm: ['--set', 'image=registry.example.com/osc:dev', '--set', 'logLevel=debug'],
        osc: ['--image', 'registry.example.com/osc:dev', '--log-level', 'debug', '--distribution', 'kubernetes'],
      },
      {
        helm: ['--set', 'image=registry.example.com/osc:dev', '--set', 'distribution=openshift'],
        osc: ['--image', 'registry.example.com/osc:dev', '--distribution', 'openshift'],
      },
    ];
    // osc install applies the ServiceMonitor where the Prometheus Operator's API is served: so does the chart.
    const withMonitoring = ['--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor'];
    const plain = objectsOf((await run(helm, ['template', 'osc', chart], { maxBuffer: 16 << 20 })).stdout);
    assert.equal(
      plain.some((o) => o.kind === 'ServiceMonitor'),
      false,
      'no ServiceMonitor on a cluster without the Prometheus Operator',
    );
    for (const c of cases) {
      const rendered = await run(helm, ['template', 'osc', chart, ...withMonitoring, ...c.helm], { maxBuffer: 16 << 20 });
      // Rendered as for a cluster that serves the Prometheus Operator's API: osc install's ServiceMonitor too.
      const dry = await runOsc(['install', '--dry-run', '--service-monitor', ...c.osc]);
      assert.equal(dry.code, 0, dry.stderr);
      const fromHelm = objectsOf(rendered.stdout);
      const fromOsc = objectsOf(dry.stdout);
      assert.ok(fromOsc.length >= 10, `${fromOsc.length} objects`);
      assert.deepEqual(sorted(fromHelm), sorted(fromOsc), `helm template ${c.helm.join(' ')}`);
    }
    const scaled = objectsOf(
      (await run(helm, ['template', 'osc', chart, '--set', 'replicas=2', '--set', 'monitorImage=mirror.local/m:1'])).stdout,
    );
    const dep = scaled.find((o) => o.kind === 'Deployment') as KubeObject & {
      spec: { replicas: number; template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
    };
    assert.equal(dep.spec.replicas, 2);
    assert.equal(dep.spec.template.spec.containers[0]?.env.find((e) => e.name === 'RELATED_IMAGE_KATA_MONITOR')?.value, 'mirror.local/m:1');
  });

  test("the chart's objects are accepted by the API server (server-side dry run)", async () => {
    const rendered = objectsOf((await run(helm, ['template', 'osc', chart], { maxBuffer: 16 << 20 })).stdout);
    assert.ok(
      rendered.some((o) => o.metadata.name === 'osc-kata-deploy'),
      "kata-deploy's identity (the default distribution)",
    );
    const isServed = await servedKinds();
    const unserved = rendered.filter((o) => !isServed(o)).map((o) => o.kind ?? '');
    assert.deepEqual(
      unserved.filter((k) => !MONITORING_KINDS.has(k)),
      [],
      'every kind but the Prometheus Operator ones is served',
    );
    const stream = rendered
      .filter(isServed)
      .map((o) => stringify(o))
      .join('---\n');
    const r = await kubectl(['apply', '--server-side', '--dry-run=server', '--field-manager=helm', '-f', '-'], stream);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /deployment\.apps\/osc-controller-manager serverside-applied \(server dry run\)/);
  });
});
