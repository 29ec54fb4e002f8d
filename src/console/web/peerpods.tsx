import { IMAGE_CONDITIONS, IMAGE_JOB_COMPLETED, IMAGE_JOB_FAILED, IMAGE_JOB_RUNNING, PEERPODS_CONDITIONS } from '../../api/kataconfig.ts';
import { OPERATOR_NAMESPACE } from '../../api/names.ts';
import { type KataConfigObj, type KubeObj, useWatch } from './api.ts';
import type { Condition } from './model.ts';

const NS = OPERATOR_NAMESPACE;

/** What the PodVMImageJob* conditions say, in one word. */
function imageJobState(conditions: Condition[]): string {
  const is = (t: string) => conditions.find((c) => c.type === t)?.status === 'True';
  if (is(IMAGE_JOB_RUNNING)) return 'running';
  if (is(IMAGE_JOB_FAILED)) return 'failed';
  if (is(IMAGE_JOB_COMPLETED)) return 'completed';
  // Once PODVM_AMI_ID holds an image (built earlier, or given by the administrator) no job is needed.
  if (conditions.some((c) => (IMAGE_CONDITIONS as readonly string[]).includes(c.type) && c.reason === 'ImageProvided'))
    return 'image provided';
  return 'not started';
}

/** Peer pods, when a KataConfig enables them: the configuration's validity, the pod VM image job, the per-node limit. */
export function PeerPodsPage({ kcs }: { kcs: KataConfigObj[] }) {
  const kc = kcs.find((k) => k.spec?.enablePeerPods);
  const byName = (n: string) => `fieldSelector=${encodeURIComponent(`metadata.name=${n}`)}`;
  const cm = useWatch<KubeObj & { data?: Record<string, string> }>(`/api/v1/namespaces/${NS}/configmaps`, byName('peer-pods-cm')).items[0];
  const ppc = useWatch<KubeObj>(
    `/apis/confidentialcontainers.org/v1alpha1/namespaces/${NS}/peerpodconfigs`,
    byName('peerpodconfig-openshift'),
  );
  const jobs = useWatch<KubeObj>(`/apis/batch/v1/namespaces/${NS}/jobs`);
  const imageJobs = jobs.items.filter((j) => j.metadata.name.startsWith('osc-podvm-image-'));
  const conditions: Condition[] = (kc?.status?.conditions ?? []).filter((c: Condition) =>
    (PEERPODS_CONDITIONS as readonly string[]).includes(c.type),
  );
  const pc = ppc.items[0];
  if (!kc) return <p class="muted">No KataConfig enables peer pods.</p>;
  return (
    <section>
      <div class="titlebar">
        <h1>Peer pods</h1>
      </div>
      <h2>Configuration</h2>
      <table class="list" data-test="peerpods-conditions">
        <thead>
          <tr>
            <th>Condition</th>
            <th>Status</th>
            <th>Reason</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {conditions.map((c) => (
            <tr key={c.type}>
              <td>{c.type}</td>
              <td>{c.status}</td>
              <td>{c.reason}</td>
              <td>{c.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>ConfigMap {NS}/peer-pods-cm</h3>
      {cm ? (
        <dl class="spec">
          {Object.entries(cm.data ?? {}).map(([k, v]) => (
            <>
              <dt key={`k-${k}`}>{k}</dt>
              <dd key={`v-${k}`}>{v}</dd>
            </>
          ))}
        </dl>
      ) : (
        <p class="muted">Not found: create it as the documentation describes.</p>
      )}
      <p class="muted">The credentials Secret peer-pods-secret is never shown here.</p>
      <h2>Pod VM image</h2>
      <dl class="spec" data-test="image">
        <dt>image (PODVM_AMI_ID)</dt>
        <dd data-test="image-id">{cm?.data?.PODVM_AMI_ID || 'none yet'}</dd>
        <dt>image job</dt>
        <dd data-test="image-job-state" data-state={imageJobState(conditions)}>
          {imageJobState(conditions)}
        </dd>
        <dt>osc reports</dt>
        <dd>{conditions.find((c) => c.type === IMAGE_JOB_RUNNING)?.message ?? '—'}</dd>
      </dl>
      <table class="list">
        <tbody>
          {imageJobs.map((j) => (
            <tr key={j.metadata.name}>
              <td>{j.metadata.name}</td>
              <td>
                {j.status?.succeeded
                  ? 'completed'
                  : j.status?.failed
                    ? `failed (${j.status.failed})`
                    : j.status?.active
                      ? 'running'
                      : 'pending'}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Per-node limit</h2>
      {pc ? (
        <dl class="spec">
          <dt>limit (pod VMs per node)</dt>
          <dd data-test="limit">{String(pc.spec?.limit ?? '')}</dd>
          <dt>setup completed</dt>
          <dd>{String(pc.status?.setupCompleted ?? false)}</dd>
          <dt>nodes advertising kata.peerpods.io/vm</dt>
          <dd>{(pc.status?.nodes ?? []).join(', ') || '—'}</dd>
        </dl>
      ) : (
        <p class="muted">{ppc.error || 'PeerPodConfig peerpodconfig-openshift not created yet.'}</p>
      )}
    </section>
  );
}
