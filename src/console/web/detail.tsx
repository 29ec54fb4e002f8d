import { memo } from 'preact/compat';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { IN_PROGRESS } from '../../api/kataconfig.ts';
import { type KataConfigObj, type KubeObj, kube, statusMessage, useLink, useTick, useWatch } from './api.ts';
import { ConfidentialPanel } from './confidential.tsx';
import { age, blockingPods, type Condition, conditionOf, headlineOf, KATACONFIG_API, rememberUninstall, selectorText } from './model.ts';
import { NodeTiles } from './nodes.tsx';
import { toYaml } from './yaml.ts';

const KIND = { apiVersion: 'kataconfiguration.openshift.io/v1', kind: 'KataConfig' };
const KATA_RUNTIME_CLASSES = new Set(['kata', 'kata-remote', 'kata-cc', 'kata-nvidia-gpu', 'kata-cc-nvidia-gpu']);

/**
 * One KataConfig, live: every change arrives through a watch, so the status, the tiles and the YAML move
 * on their own (no Reload). Memoised: the shell's own KataConfig watch re-renders the shell, not this
 * page, which renders once per change from its own watch.
 */
export const KataConfigDetail = memo(function KataConfigDetail({ name, tab }: { name: string; tab: string }) {
  // The shell's stream of KataConfigs, shared (one connection fewer: see useWatch).
  const kcs = useWatch<KataConfigObj>(KATACONFIG_API);
  const kc = kcs.items.find((k) => k.metadata.name === name);
  // The nodes seen left to uninstall: the status drops a node once it is done, the page keeps its tile.
  const uninstallSeen = useRef(new Set<string>()).current;
  if (kc) rememberUninstall(uninstallSeen, kc.status?.kataNodes);
  const [seen, setSeen] = useState(false);
  if (kc && !seen) setSeen(true);
  const base = `#/kataconfigs/${encodeURIComponent(name)}`;
  // Tabs that are links (the hash is the page, so a tab survives a reload), with the tab roles that
  // assistive technology reads: which tab is selected, and which panel it shows.
  const tabLink = (id: string, label: string) => (
    <a
      href={`${base}/${id}`}
      class={tab === id ? 'active' : ''}
      data-tab={id}
      role="tab"
      id={`tab-${id}`}
      aria-selected={tab === id}
      aria-controls="tab-panel"
    >
      {label}
    </a>
  );
  const shownTab = ['yaml', 'events'].includes(tab) ? tab : 'details';
  return (
    <section>
      <div class="titlebar">
        <h1>
          <a href="#/kataconfigs">KataConfigs</a> › {name}
        </h1>
        {kc && <DeleteButton kc={kc} />}
      </div>
      {kcs.error && <p class="error">{kcs.error}</p>}
      {kcs.synced && !kc && !kcs.error && (
        <p class="notice" data-test="gone">
          {seen
            ? `KataConfig ${name} is gone: the uninstall finished and kata was removed from the nodes.`
            : `KataConfig ${name} not found.`}
        </p>
      )}
      {kc && (
        <>
          <div class="tabs" role="tablist" aria-label={`KataConfig ${name}`}>
            {tabLink('details', 'Details')}
            {tabLink('yaml', 'YAML')}
            {tabLink('events', 'Events')}
          </div>
          <div role="tabpanel" id="tab-panel" aria-labelledby={`tab-${shownTab}`}>
            {tab === 'yaml' ? (
              <pre class="yaml" data-test="yaml">
                {toYaml(kc, KIND)}
              </pre>
            ) : tab === 'events' ? (
              <EventsTab name={name} />
            ) : (
              <DetailsTab kc={kc} uninstallSeen={uninstallSeen} />
            )}
          </div>
        </>
      )}
    </section>
  );
});

/**
 * The phase, the count (nodes ready while installing, nodes uninstalled while uninstalling) as words and
 * a progress bar, and the operator's message; a dead end is a warning with what to do. A live region:
 * assistive technology announces each change.
 */
function Summary({ kc, uninstallSeen }: { kc: KataConfigObj; uninstallSeen: ReadonlySet<string> }) {
  const h = headlineOf(kc, uninstallSeen);
  const count = `${h.done} of ${h.total} nodes ${h.unit}`;
  return (
    <div class={`summary tone-${h.tone}`} data-test="summary" data-phase={h.phase} role="status" aria-live="polite">
      <span class={`phase ${h.phase.replace(/\s+/g, '-').toLowerCase()} tone-${h.tone}`}>{h.phase}</span>
      {!h.deadEnd && (h.total > 0 || h.unit === 'ready') ? (
        <span class="count" data-test="count">
          <progress max={h.total || 1} value={h.done} aria-label={count} /> {count}
        </span>
      ) : null}
      {kc.metadata.deletionTimestamp && h.unit === 'ready' && <span class="deleting">deletion requested</span>}
      {h.message && !h.deadEnd && <span class="message">{h.message}</span>}
      {h.deadEnd && (
        <div class="dead-end" data-test="dead-end">
          <strong>{h.deadEnd.title}.</strong> The operator says: “{h.message}”. {h.deadEnd.todo}
        </div>
      )}
    </div>
  );
}

function DetailsTab({ kc, uninstallSeen }: { kc: KataConfigObj; uninstallSeen: ReadonlySet<string> }) {
  const nodesWatch = useWatch<KubeObj>('/api/v1/nodes');
  const nodes = useMemo(() => new Map(nodesWatch.items.map((n) => [n.metadata.name, n])), [nodesWatch.items]);
  const conditions: Condition[] = kc.status?.conditions ?? [];
  const now = useTick(5000);
  const blocked = conditionOf(kc, IN_PROGRESS)?.reason === 'BlockedByExistingKataPods';
  return (
    <div class="details">
      <Summary kc={kc} uninstallSeen={uninstallSeen} />
      {blocked && <BlockingPods kc={kc} />}
      <h2>Nodes</h2>
      <NodeTiles
        kataNodes={kc.status?.kataNodes}
        nodes={nodes}
        uninstalled={kc.metadata.deletionTimestamp ? uninstallSeen : undefined}
        deadEnd={!!headlineOf(kc, uninstallSeen).deadEnd}
      />
      <h2>Conditions</h2>
      <table class="list" data-test="conditions">
        <thead>
          <tr>
            <th>Type</th>
            <th>Status</th>
            <th>Reason</th>
            <th>Message</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {conditions.map((c) => (
            <tr key={c.type} data-condition={c.type}>
              <td>{c.type}</td>
              <td>{c.status}</td>
              <td>{c.reason}</td>
              <td>{c.message}</td>
              <td>{age(c.lastTransitionTime, now)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Spec</h2>
      <dl class="spec">
        <dt>checkNodeEligibility</dt>
        <dd>{String(kc.spec?.checkNodeEligibility ?? false)}</dd>
        <dt>enablePeerPods</dt>
        <dd>{String(kc.spec?.enablePeerPods ?? false)}</dd>
        <dt>logLevel</dt>
        <dd>{kc.spec?.logLevel ?? 'info'}</dd>
        <dt>kataConfigPoolSelector</dt>
        <dd data-test="pool-selector-text">
          {kc.spec?.kataConfigPoolSelector ? selectorText(kc.spec.kataConfigPoolSelector) : 'all worker nodes'}
        </dd>
      </dl>
      <RuntimeClasses names={kc.status?.runtimeClasses ?? []} />
      <ConfidentialPanel nodes={nodesWatch.items} />
    </div>
  );
}

function RuntimeClasses({ names }: { names: string[] }) {
  const rcs = useWatch<KubeObj & { handler?: string; overhead?: { podFixed?: Record<string, string> } }>(
    '/apis/node.k8s.io/v1/runtimeclasses',
  );
  const ours = rcs.items.filter((rc) => KATA_RUNTIME_CLASSES.has(rc.metadata.name) || names.includes(rc.metadata.name));
  return (
    <>
      <h2>RuntimeClasses</h2>
      <p class="muted">status.runtimeClasses: {names.length ? names.join(', ') : 'none yet'}</p>
      {ours.length > 0 && (
        <table class="list" data-test="runtimeclasses">
          <thead>
            <tr>
              <th>Name</th>
              <th>Handler</th>
              <th>Overhead</th>
              <th>Node selector</th>
            </tr>
          </thead>
          <tbody>
            {ours.map((rc) => (
              <tr key={rc.metadata.name} data-rc={rc.metadata.name}>
                <td>{rc.metadata.name}</td>
                <td>{rc.handler}</td>
                <td>
                  {Object.entries(rc.overhead?.podFixed ?? {})
                    .map(([k, v]) => `${k}: ${v}`)
                    .join(', ')}
                </td>
                <td>
                  {Object.entries(
                    (rc as KubeObj & { scheduling?: { nodeSelector?: Record<string, string> } }).scheduling?.nodeSelector ?? {},
                  )
                    .map(([k, v]) => `${k}=${v}`)
                    .join(', ')}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** The pods that keep the uninstall waiting: every pod that asks for a kata runtime class. */
function BlockingPods({ kc }: { kc: KubeObj }) {
  const pods = useWatch<KubeObj>('/api/v1/pods');
  const blocking = blockingPods(pods.items, kc);
  return (
    <div class="blocked" data-test="blocking-pods">
      <h2>Pods blocking the uninstall</h2>
      {pods.error && <p class="error">{pods.error}</p>}
      {blocking.length === 0 && pods.synced && <p class="muted">None left: the uninstall proceeds.</p>}
      <ul>
        {blocking.map((p) => (
          <li key={`${p.metadata.namespace}/${p.metadata.name}`} data-pod={`${p.metadata.namespace}/${p.metadata.name}`}>
            {p.metadata.namespace}/{p.metadata.name} <span class="muted">(runtimeClassName {p.spec?.runtimeClassName})</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

/**
 * Delete KataConfig, confirmed in a modal dialog that says beforehand what will happen: kata leaves every
 * node, or, while pods use kata, that the delete will be blocked until they are gone, and which they are.
 */
function DeleteButton({ kc }: { kc: KubeObj }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState('');
  const { connected } = useLink();
  const opener = useRef<HTMLButtonElement>(null);
  if (kc.metadata.deletionTimestamp) return <span class="muted">Deleting…</span>;
  const close = () => {
    setConfirming(false);
    // Back where the keyboard was: the dialog opened from this button.
    requestAnimationFrame(() => opener.current?.focus());
  };
  const del = async () => {
    const r = await kube('DELETE', `${KATACONFIG_API}/${encodeURIComponent(kc.metadata.name)}`);
    close();
    setError(r.ok ? '' : statusMessage(r.body, r.status));
  };
  return (
    <div class="delete">
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
      <button
        type="button"
        class="danger"
        ref={opener}
        onClick={() => setConfirming(true)}
        disabled={!connected}
        aria-haspopup="dialog"
        data-test="delete"
      >
        Delete KataConfig
      </button>
      {confirming && <DeleteDialog kc={kc} onDelete={del} onCancel={close} />}
    </div>
  );
}

function DeleteDialog({ kc, onDelete, onCancel }: { kc: KubeObj; onDelete: () => void; onCancel: () => void }) {
  const pods = useWatch<KubeObj>('/api/v1/pods');
  const blocking = blockingPods(pods.items, kc);
  const ref = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const d = ref.current;
    // Modal: focus moves in and stays in, Escape cancels (the browser's own dialog behaviour). The
    // focus starts on Cancel: Enter on a dialog that just opened must not delete.
    if (d && !d.open) d.showModal();
    cancel.current?.focus();
  }, []);
  const name = kc.metadata.name;
  return (
    <dialog
      ref={ref}
      class="confirm"
      data-test="confirm-delete"
      aria-labelledby="delete-title"
      aria-describedby="delete-what"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="delete-title">Delete KataConfig {name}?</h2>
      <div id="delete-what">
        {!pods.synced && !pods.error && <p class="muted">Looking for pods that use kata…</p>}
        {pods.error && <p class="error">Could not list the pods that use kata: {pods.error}</p>}
        {pods.synced && blocking.length === 0 && !pods.error && <p>Kata leaves every node (each reboots), and its RuntimeClass goes.</p>}
        {blocking.length > 0 && (
          <div class="blocked" data-test="delete-will-block">
            <p>
              <strong>The delete will be blocked: {blocking.length === 1 ? '1 pod uses' : `${blocking.length} pods use`} kata.</strong> The
              KataConfig is marked for deletion at once, but kata stays on the nodes until these pods are deleted:
            </p>
            <ul>
              {blocking.slice(0, 50).map((p) => (
                <li key={`${p.metadata.namespace}/${p.metadata.name}`} data-pod={`${p.metadata.namespace}/${p.metadata.name}`}>
                  {p.metadata.namespace}/{p.metadata.name} <span class="muted">(runtimeClassName {p.spec?.runtimeClassName})</span>
                </li>
              ))}
            </ul>
            {blocking.length > 50 && <p class="muted">and {blocking.length - 50} more</p>}
          </div>
        )}
      </div>
      <div class="actions">
        <button type="button" class="danger" onClick={onDelete}>
          {blocking.length > 0 ? 'Delete anyway' : 'Delete'}
        </button>
        <button type="button" onClick={onCancel} ref={cancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

function EventsTab({ name }: { name: string }) {
  const events = useWatch<
    KubeObj & {
      reason?: string;
      note?: string;
      type?: string;
      eventTime?: string;
      deprecatedLastTimestamp?: string;
      series?: { count: number };
    }
  >('/apis/events.k8s.io/v1/events', `fieldSelector=${encodeURIComponent(`regarding.kind=KataConfig,regarding.name=${name}`)}`);
  const now = useTick(5000);
  const when = (e: { eventTime?: string; deprecatedLastTimestamp?: string; metadata: { creationTimestamp?: string } }) =>
    e.eventTime ?? e.deprecatedLastTimestamp ?? e.metadata.creationTimestamp ?? '';
  const items = [...events.items].sort((a, b) => when(b).localeCompare(when(a)));
  return (
    <div>
      {events.error && <p class="error">{events.error}</p>}
      {events.synced && items.length === 0 && <p class="muted">No events.</p>}
      <table class="list" data-test="events">
        <thead>
          <tr>
            <th>Age</th>
            <th>Type</th>
            <th>Reason</th>
            <th>Message</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={`${e.metadata.namespace}/${e.metadata.name}`}>
              <td>{age(when(e), now)}</td>
              <td>{e.type}</td>
              <td>{e.reason}</td>
              <td>{e.note}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
