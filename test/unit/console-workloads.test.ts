import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parse } from 'yaml';
import { podPhase, podsByRuntimeClass, sampleWorkload, workloadRequest } from '../../src/console/web/workloads-model.ts';

describe('console: the Workloads page', () => {
  test("the samples are the documentation's hello-openshift, as a Pod and as a Deployment, with the chosen runtime class", () => {
    const pod = parse(sampleWorkload('Pod', 'kata'));
    assert.equal(pod.kind, 'Pod');
    assert.equal(pod.spec.runtimeClassName, 'kata');
    assert.equal(pod.spec.containers[0].image, 'quay.io/openshift/origin-hello-openshift');
    assert.deepEqual(pod.spec.containers[0].securityContext.capabilities, { drop: ['ALL'] });
    const dep = parse(sampleWorkload('Deployment', 'kata-remote'));
    assert.equal(dep.apiVersion, 'apps/v1');
    assert.equal(dep.spec.template.spec.runtimeClassName, 'kata-remote');
    assert.deepEqual(dep.spec.selector.matchLabels, dep.spec.template.metadata.labels);
  });

  test('a YAML becomes a request to the namespaced path; anything else is refused in words', () => {
    const pod = workloadRequest(sampleWorkload('Pod', 'kata'), 'default');
    assert.ok(!('error' in pod));
    assert.equal(pod.path, '/api/v1/namespaces/default/pods');
    assert.equal(pod.runtimeClassName, 'kata');
    assert.equal((pod.body.metadata as { namespace: string }).namespace, 'default');
    const dep = workloadRequest(
      sampleWorkload('Deployment', 'kata').replace('name: hello-openshift', 'name: web\n  namespace: team-a'),
      'default',
    );
    assert.ok(!('error' in dep));
    assert.equal(dep.path, '/apis/apps/v1/namespaces/team-a/deployments');
    const svc = workloadRequest('apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n', 'default');
    assert.match('error' in svc ? svc.error : '', /creates a Pod \(apiVersion v1\) or a Deployment \(apiVersion apps\/v1\), not Service/);
    assert.match((workloadRequest('kind: [', 'default') as { error: string }).error, /does not parse/);
    assert.match((workloadRequest('apiVersion: v1\nkind: Pod\nmetadata: {}\n', 'default') as { error: string }).error, /metadata\.name/);
  });

  test('pods grouped by kata runtime class with their phase; Terminating while deleted', () => {
    const p = (name: string, rc?: string, extra: object = {}) => ({
      metadata: { name, namespace: 'default', ...extra },
      spec: { runtimeClassName: rc },
    });
    const groups = podsByRuntimeClass([p('b', 'kata'), p('a', 'kata'), p('plain'), p('r', 'kata-remote')], ['kata', 'kata-remote']);
    assert.deepEqual(
      [...groups].map(([rc, ps]) => [rc, ps.map((x) => x.metadata.name)]),
      [
        ['kata', ['a', 'b']],
        ['kata-remote', ['r']],
      ],
    );
    assert.equal(podPhase({ metadata: { name: 'x' } }), 'Pending');
    assert.equal(podPhase({ metadata: { name: 'x', deletionTimestamp: 'now' }, status: { phase: 'Running' } }), 'Terminating');
  });
});
