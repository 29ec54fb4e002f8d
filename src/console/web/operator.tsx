import { LEADER_ELECTION_LEASE, OPERATOR_NAMESPACE } from '../../api/names.ts';
import { type ConsoleInfo, type KubeObj, useGet, useTick, useWatch } from './api.ts';

const NS = OPERATOR_NAMESPACE;
const LEASE = LEADER_ELECTION_LEASE;
const DEPLOYMENT = 'osc-controller-manager';

/**
 * The operator: where it runs (a Deployment in the cluster, or this `osc start` process), its version,
 * whether it is ready, which replica leads (from the leader Lease), and the platform the cluster reports.
 */
export function OperatorPage({ info }: { info: ConsoleInfo | undefined }) {
  const now = useTick(2000);
  const byName = (n: string) => `fieldSelector=${encodeURIComponent(`metadata.name=${n}`)}`;
  const lease = useWatch<KubeObj>(`/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, byName(LEASE)).items[0];
  const deployment = useWatch<KubeObj>(`/apis/apps/v1/namespaces/${NS}/deployments`, byName(DEPLOYMENT)).items[0];
  const infra = useGet<KubeObj>('/k8s/apis/config.openshift.io/v1/infrastructures/cluster');
  const crd = useGet<{ resources?: { name: string }[] }>('/k8s/apis/kataconfiguration.openshift.io/v1');
  const local = info?.localOperator;

  const holder = lease?.spec?.holderIdentity ?? '';
  const renewed = lease?.spec?.renewTime ? (now - Date.parse(lease.spec.renewTime)) / 1000 : undefined;
  const leaseFresh = renewed !== undefined && renewed <= (lease?.spec?.leaseDurationSeconds ?? 15);
  const image: string = deployment?.spec?.template?.spec?.containers?.[0]?.image ?? '';
  const where = local
    ? local.where
    : deployment
      ? `in the cluster: Deployment ${NS}/${DEPLOYMENT}`
      : 'not found in the cluster (no Deployment); it may run outside the cluster with osc run';
  const version = local ? `osc ${info?.version}` : image ? image.split(':').pop() : '—';
  const ready = local
    ? local.ready
      ? 'Ready'
      : 'Not ready'
    : deployment
      ? `${deployment.status?.readyReplicas ?? 0} of ${deployment.spec?.replicas ?? 0} replicas ready`
      : '—';
  const platform =
    infra.data?.status?.platformStatus?.type ??
    infra.data?.status?.platform ??
    (infra.code === 404 ? 'not OpenShift (no Infrastructure)' : '—');

  return (
    <section>
      <div class="titlebar">
        <h1>OpenShift sandboxed containers Operator</h1>
      </div>
      <dl class="spec" data-test="operator">
        <dt>Runs</dt>
        <dd data-test="where">{where}</dd>
        <dt>Version</dt>
        <dd data-test="version">{version}</dd>
        {image && (
          <>
            <dt>Image</dt>
            <dd>{image}</dd>
          </>
        )}
        <dt>Ready</dt>
        <dd data-test="ready">{ready}</dd>
        <dt>Leader</dt>
        <dd data-test="leader">
          {holder ? (
            <>
              {holder}
              {local && holder === local.identity ? ' (this process)' : ''}{' '}
              <span class="muted">
                (Lease {NS}/{LEASE}, renewed {Math.max(0, Math.round(renewed ?? 0))}s ago{leaseFresh ? '' : ': expired'})
              </span>
            </>
          ) : (
            'no leader (no Lease held)'
          )}
        </dd>
        <dt>Platform</dt>
        <dd data-test="platform">{platform}</dd>
        <dt>KataConfig API</dt>
        <dd>{crd.data ? 'kataconfiguration.openshift.io/v1 served' : crd.code === 404 ? 'not installed: run osc install' : '—'}</dd>
        <dt>Console</dt>
        <dd>
          osc {info?.version} · cluster {info?.server} · context {info?.context} · acting as {info?.user}
        </dd>
        {local?.metricsUrl && (
          <>
            <dt>Metrics</dt>
            <dd>{local.metricsUrl}</dd>
          </>
        )}
      </dl>
    </section>
  );
}
