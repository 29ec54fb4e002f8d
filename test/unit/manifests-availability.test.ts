/**
 * The operator's webhooks fail closed, and a kata install drains nodes: every manifest form runs two
 * replicas spread over nodes, with a disruption budget and a priority class that the platform allows in
 * the operator's namespace (docs/security.md, "Availability of the admission webhooks").
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { manifestFiles, manifests, NAMES, operatorPriorityClass } from '../../src/install/manifests.ts';
import { ENSURE_SCCS_FLAG } from '../../src/install/scc.ts';
import type { KubeObject } from '../../src/kube/types.ts';
import { TEMPLATE_OPTIONS, templateOf } from '../../src/packaging/helm.ts';
import { olmBundle } from '../../src/packaging/olm.ts';

interface PodSpec {
  priorityClassName?: string;
  affinity?: {
    podAntiAffinity?: {
      preferredDuringSchedulingIgnoredDuringExecution?: {
        weight: number;
        podAffinityTerm: { labelSelector: { matchLabels: Record<string, string> }; topologyKey: string };
      }[];
      requiredDuringSchedulingIgnoredDuringExecution?: unknown[];
    };
  };
}
interface DeploymentSpec {
  replicas: number;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}
const deploymentOf = (objects: KubeObject[]) =>
  (objects.find((o) => o.kind === 'Deployment') as KubeObject & { spec: DeploymentSpec }).spec;
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);

describe('the operator survives a drain: replicas, disruption budget, anti-affinity, priority', () => {
  for (const distribution of ['openshift', 'kubernetes'] as const) {
    test(`osc install --distribution ${distribution}`, async () => {
      const objects = await manifests({ distribution });
      const d = deploymentOf(objects);
      assert.equal(d.replicas, 2, 'two replicas: one leads, both answer the webhooks');
      const podLabels = d.template.metadata.labels;

      const pdb = objects.find((o) => o.kind === 'PodDisruptionBudget') as KubeObject & {
        spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
      };
      assert.ok(pdb, 'a PodDisruptionBudget');
      assert.equal(pdb.apiVersion, 'policy/v1');
      assert.equal(pdb.metadata.namespace, 'openshift-sandboxed-containers-operator');
      assert.equal(pdb.spec.minAvailable, 1);
      assert.ok(matches(pdb.spec.selector.matchLabels, podLabels), 'it selects the operator pods');
      assert.deepEqual(pdb.spec.selector.matchLabels, d.selector.matchLabels, 'exactly the Deployment’s pods');

      const anti = d.template.spec.affinity?.podAntiAffinity;
      assert.equal(anti?.requiredDuringSchedulingIgnoredDuringExecution, undefined, 'preferred, so a one-node cluster runs both');
      const term = anti?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm;
      assert.equal(term?.topologyKey, 'kubernetes.io/hostname');
      assert.ok(term && matches(term.labelSelector.matchLabels, podLabels), 'away from its own replicas');

      const priority = d.template.spec.priorityClassName;
      assert.equal(priority, operatorPriorityClass(distribution));
      const ownClass = objects.find((o) => o.kind === 'PriorityClass') as
        | (KubeObject & { value: number; globalDefault: boolean })
        | undefined;
      if (distribution === 'openshift') {
        assert.equal(priority, 'system-cluster-critical', 'allowed in openshift-* namespaces, as OpenShift’s operators use');
        assert.equal(ownClass, undefined);
      } else {
        assert.equal(ownClass?.metadata.name, priority, 'its own class: system-* may be reserved for kube-system');
        assert.equal(ownClass?.value, 1_000_000_000, 'the highest value a non-system class may have');
        assert.equal(ownClass?.globalDefault, false);
        const order = objects.map((o) => o.kind);
        assert.ok(order.indexOf('PriorityClass') < order.indexOf('Deployment'), 'the class exists before pods name it');
      }
    });
  }

  test('one replica: no disruption budget, which would block every drain of its node', async () => {
    const objects = await manifests({ replicas: 1 });
    assert.equal(deploymentOf(objects).replicas, 1);
    assert.equal(
      objects.some((o) => o.kind === 'PodDisruptionBudget'),
      false,
    );
  });

  test('the OLM bundle carries the Deployment as installed and the disruption budget', async () => {
    const objects = await manifests();
    const bundle = olmBundle(objects, { version: '0.0.0' });
    const text = JSON.stringify(bundle.csv);
    const d = structuredClone(deploymentOf(objects)) as unknown as { template: { spec: { containers: { args?: string[] }[] } } };
    // As installed, plus the one flag of the OLM form: its operator keeps osc's SCCs, which no bundle carries.
    const manager = d.template.spec.containers[0];
    if (manager) manager.args = [...(manager.args ?? []), ENSURE_SCCS_FLAG];
    assert.ok(text.includes(JSON.stringify(d)), 'the CSV’s install strategy runs the installed Deployment');
    assert.ok(
      bundle.extras.some((m) => m.kind === 'PodDisruptionBudget' && m.metadata.name === NAMES.disruptionBudget),
      'the budget ships as a bundle manifest',
    );
  });

  test('the Helm chart renders the budget only for more than one replica, and the priority class as a value', async () => {
    const file = (await manifestFiles(TEMPLATE_OPTIONS)).find((f) => f.objects.some((o) => o.kind === 'Deployment'));
    assert.ok(file);
    const template = templateOf(file);
    assert.match(
      template,
      /\{\{- if gt \(int \.Values\.replicas\) 1 \}\}\napiVersion: policy\/v1\nkind: PodDisruptionBudget\n[^{]*\{\{- end \}\}\n/,
    );
    // The value, or where it is empty the distribution's own class (templates/_helpers.tpl).
    assert.match(template, /priorityClassName: \{\{ include "osc\.priorityClassName" \. \| quote \}\}/);
  });
});
