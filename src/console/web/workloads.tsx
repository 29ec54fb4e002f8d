import { useEffect, useRef, useState } from 'preact/hooks';
import { type KubeObj, kube, statusMessage, useLink, useTick, useWatch } from './api.ts';
import { age } from './model.ts';
import {
  KATA_RUNTIME_CLASS_NAMES,
  podPhase,
  podsByRuntimeClass,
  sampleWorkload,
  type WorkloadKind,
  workloadRequest,
} from './workloads-model.ts';

type Deployment = KubeObj & { status?: { readyReplicas?: number; replicas?: number } };

/**
 * Workloads (the documentation's "deploying a workload in a sandboxed container using the web console"):
 * create a Pod or a Deployment from YAML, starting from a sample that asks for a kata runtime class; the
 * pods of each kata runtime class live, with their node and phase; delete. Every write is the
 * kubeconfig user's own request, through the console's guard.
 */
export function WorkloadsPage({ kcs }: { kcs: KubeObj[] }) {
  const rcs = useWatch<KubeObj>('/apis/node.k8s.io/v1/runtimeclasses');
  const pods = useWatch<KubeObj>('/api/v1/pods');
  const [namespace, setNamespace] = useState('default');
  // The namespace's Deployments: the console passes on namespaced Deployment requests only.
  const deployments = useWatch<Deployment>(namespace ? `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments` : null);
  const existing = KATA_RUNTIME_CLASS_NAMES.filter((n) => rcs.items.some((rc) => rc.metadata.name === n));
  const used = KATA_RUNTIME_CLASS_NAMES.filter((n) => pods.items.some((p) => p.spec?.runtimeClassName === n));
  const shown = KATA_RUNTIME_CLASS_NAMES.filter((n) => existing.includes(n) || used.includes(n));
  const kataNodes = new Set<string>(kcs.flatMap((kc) => kc.status?.kataNodes?.installed ?? []));
  const byClass = podsByRuntimeClass(pods.items, shown);
  const kataDeployments = deployments.items.filter((d) => KATA_RUNTIME_CLASS_NAMES.includes(d.spec?.template?.spec?.runtimeClassName));
  return (
    <section aria-labelledby="workloads-title">
      <div class="titlebar">
        <h1 id="workloads-title">Workloads</h1>
      </div>
      <p class="muted">
        Kata is a secondary runtime: a workload runs in a sandboxed container when its pod asks for a kata RuntimeClass with{' '}
        <code>runtimeClassName</code>.
      </p>
      <CreateWorkload runtimeClasses={existing} namespace={namespace} setNamespace={setNamespace} />
      <h2>Pods by runtime class</h2>
      {pods.error && <p class="error">{pods.error}</p>}
      {shown.length === 0 && pods.synced && <p class="muted">No kata RuntimeClass yet, and no pod asks for one.</p>}
      {shown.map((rc) => (
        <PodTable key={rc} runtimeClass={rc} pods={byClass.get(rc) ?? []} kataNodes={kataNodes} exists={existing.includes(rc)} />
      ))}
      <h2>Deployments using kata in {namespace || '…'}</h2>
      {deployments.error && <p class="error">{deployments.error}</p>}
      {deployments.synced && kataDeployments.length === 0 && !deployments.error && <p class="muted">None.</p>}
      {kataDeployments.length > 0 && (
        <table class="list" data-test="kata-deployments">
          <caption class="sr-only">Deployments whose pods ask for a kata runtime class</caption>
          <thead>
            <tr>
              <th scope="col">NAMESPACE</th>
              <th scope="col">NAME</th>
              <th scope="col">RUNTIME CLASS</th>
              <th scope="col">READY</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {kataDeployments.map((d) => (
              <tr key={`${d.metadata.namespace}/${d.metadata.name}`} data-deployment={`${d.metadata.namespace}/${d.metadata.name}`}>
                <td>{d.metadata.namespace}</td>
                <td>{d.metadata.name}</td>
                <td>{d.spec?.template?.spec?.runtimeClassName}</td>
                <td>
                  {d.status?.readyReplicas ?? 0}/{d.spec?.replicas ?? 1}
                </td>
                <td>
                  <DeleteWorkload kind="Deployment" obj={d} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function CreateWorkload(props: { runtimeClasses: string[]; namespace: string; setNamespace: (ns: string) => void }) {
  const { runtimeClasses, namespace, setNamespace } = props;
  const offered = runtimeClasses.length ? runtimeClasses : ['kata'];
  const [text, setText] = useState(() => sampleWorkload('Pod', offered[0] ?? 'kata'));
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const { connected } = useLink();
  const req = workloadRequest(text, namespace);
  const create = async (ev: Event) => {
    ev.preventDefault();
    if ('error' in req) {
      setResult({ ok: false, text: req.error });
      return;
    }
    setBusy(true);
    try {
      const r = await kube('POST', req.path, req.body);
      setResult(
        r.ok
          ? { ok: true, text: `${req.kind} ${req.namespace}/${req.name} created: it appears below once the API server lists it.` }
          : { ok: false, text: statusMessage(r.body, r.status) },
      );
    } finally {
      setBusy(false);
    }
  };
  const sample = (kind: WorkloadKind, rc: string) => (
    <button
      type="button"
      class="link"
      key={`${kind}-${rc}`}
      data-sample={`${kind}-${rc}`}
      onClick={() => setText(sampleWorkload(kind, rc))}
    >
      {kind} with {rc}
    </button>
  );
  return (
    <form class="workload-create" onSubmit={create} data-test="create-workload" aria-labelledby="create-workload-title">
      <h2 id="create-workload-title">Create a workload from YAML</h2>
      {runtimeClasses.length === 0 && (
        <p class="notice">No kata RuntimeClass exists yet: create a KataConfig first, or the API server refuses the pod.</p>
      )}
      <fieldset class="row samples">
        <legend class="muted">Samples</legend>
        {offered.flatMap((rc) => [sample('Pod', rc), sample('Deployment', rc)])}
      </fieldset>
      <div class="field">
        <label for="w-namespace">Namespace</label>
        <input
          id="w-namespace"
          value={namespace}
          onInput={(e) => setNamespace(e.currentTarget.value)}
          aria-describedby="w-namespace-help"
        />
        <div class="help" id="w-namespace-help">
          Used when the YAML names none, and for the list of Deployments below.
        </div>
      </div>
      <div class="field">
        <label for="w-yaml">YAML</label>
        <textarea id="w-yaml" class="yaml" rows={22} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        {!('error' in req) && !req.runtimeClassName && (
          <div class="help warn" data-test="no-runtime-class">
            This workload sets no runtimeClassName: it runs with the default runtime, not in a sandboxed container.
          </div>
        )}
      </div>
      <div aria-live="polite">
        {result && (
          <p class={result.ok ? 'notice' : 'error'} role={result.ok ? 'status' : 'alert'} data-test="workload-result">
            {result.text}
          </p>
        )}
      </div>
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || !connected}>
          Create
        </button>
      </div>
    </form>
  );
}

function PodTable(props: { runtimeClass: string; pods: KubeObj[]; kataNodes: ReadonlySet<string>; exists: boolean }) {
  const now = useTick(5000);
  const id = `pods-${props.runtimeClass}`;
  return (
    <div class="pods-by-class" data-runtime-class={props.runtimeClass}>
      <h3 id={id}>
        {props.runtimeClass}{' '}
        <span class="muted">
          ({props.pods.length} pod{props.pods.length === 1 ? '' : 's'}
          {props.exists ? '' : '; this RuntimeClass does not exist'})
        </span>
      </h3>
      {props.pods.length === 0 ? (
        <p class="muted">No pod uses {props.runtimeClass}.</p>
      ) : (
        <table class="list" aria-labelledby={id}>
          <thead>
            <tr>
              <th scope="col">NAMESPACE</th>
              <th scope="col">NAME</th>
              <th scope="col">NODE</th>
              <th scope="col">PHASE</th>
              <th scope="col">AGE</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {props.pods.map((p) => {
              const node = p.spec?.nodeName ?? '';
              const kataNode = node && props.kataNodes.has(node);
              return (
                <tr
                  key={`${p.metadata.namespace}/${p.metadata.name}`}
                  data-pod={`${p.metadata.namespace}/${p.metadata.name}`}
                  data-phase={podPhase(p)}
                  data-node={node}
                >
                  <td>{p.metadata.namespace}</td>
                  <td>{p.metadata.name}</td>
                  <td>
                    {node || <span class="muted">not scheduled</span>}
                    {kataNode && (
                      <span class="badge" data-test="kata-node">
                        kata node
                      </span>
                    )}
                  </td>
                  <td>{podPhase(p)}</td>
                  <td>{age(p.metadata.creationTimestamp, now)}</td>
                  <td>{!p.metadata.deletionTimestamp && <DeleteWorkload kind="Pod" obj={p} />}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </div>
  );
}

/** Delete a Pod or a Deployment, confirmed in a modal dialog whose focus starts on Cancel. */
function DeleteWorkload({ kind, obj }: { kind: WorkloadKind; obj: KubeObj }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  const { connected } = useLink();
  const opener = useRef<HTMLButtonElement>(null);
  const ns = obj.metadata.namespace ?? 'default';
  const name = obj.metadata.name;
  const path =
    kind === 'Pod'
      ? `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}`
      : `/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/deployments/${encodeURIComponent(name)}`;
  const close = () => {
    setConfirming(false);
    requestAnimationFrame(() => opener.current?.focus());
  };
  const del = async () => {
    const r = await kube('DELETE', path);
    close();
    setError(r.ok ? '' : statusMessage(r.body, r.status));
  };
  return (
    <>
      <button
        type="button"
        class="link danger-link"
        ref={opener}
        disabled={!connected}
        aria-haspopup="dialog"
        aria-label={`Delete ${kind} ${ns}/${name}`}
        onClick={() => setConfirming(true)}
      >
        Delete
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
      {confirming && (
        <ConfirmDialog title={`Delete ${kind} ${ns}/${name}?`} confirm="Delete" onConfirm={del} onCancel={close}>
          {kind === 'Deployment' ? 'The Deployment and its pods are deleted.' : 'The pod is stopped and deleted.'}
        </ConfirmDialog>
      )}
    </>
  );
}

function ConfirmDialog(props: { title: string; confirm: string; onConfirm: () => void; onCancel: () => void; children: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (ref.current && !ref.current.open) ref.current.showModal();
    cancel.current?.focus();
  }, []);
  return (
    <dialog
      ref={ref}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-what"
      onCancel={(e) => {
        e.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <p id="confirm-what">{props.children}</p>
      <div class="actions">
        <button type="button" class="danger" onClick={props.onConfirm}>
          {props.confirm}
        </button>
        <button type="button" onClick={props.onCancel} ref={cancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
