import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './style.css';
import { type ConsoleInfo, type KataConfigObj, type Link, useGet, useHeartbeat, useLink, useWatch } from './api.ts';
import { CreateKataConfig } from './create.tsx';
import { KataConfigDetail } from './detail.tsx';
import { KataConfigList } from './list.tsx';
import { MetricsPage } from './metrics.tsx';
import { KATACONFIG_API } from './model.ts';
import { OperatorPage } from './operator.tsx';
import { PeerPodsPage } from './peerpods.tsx';
import { WorkloadsPage } from './workloads.tsx';

/** The hash is the page: #/kataconfigs/NAME survives a reload and works with the back button. */
function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, '') || 'kataconfigs').split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    // The hash may have changed between the first render and this subscription.
    on();
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

/**
 * Says that the page lost its server or the API server, from when, and that what it shows is the last
 * known state: the page below is greyed and inert (no action can be started) until the link is back and
 * every list has been read again.
 */
function Disconnected({ link }: { link: Link }) {
  const since = new Date(link.since).toLocaleTimeString();
  return (
    <div class="disconnected" role="alert" data-test="disconnected">
      <strong>Disconnected since {since}</strong>: {link.reason}
      {/[.?!]$/.test(link.reason) ? '' : '.'} What you see is how things were then, not now; actions are disabled until the connection is
      back (the console keeps trying).
    </div>
  );
}

function App() {
  useHeartbeat();
  const link = useLink();
  const route = useRoute();
  const info = useGet<ConsoleInfo>('/console/info').data;
  const kcs = useWatch<KataConfigObj>(KATACONFIG_API);
  const peerPods = kcs.items.some((k) => k.spec?.enablePeerPods);
  const [page, arg] = route;
  const tab = (id: string, label: string) => (
    <a href={`#/${id}`} class={page === id ? 'active' : ''} aria-current={page === id ? 'page' : undefined} data-nav={id}>
      {label}
    </a>
  );
  let body = <KataConfigList kcs={kcs} />;
  if (page === 'operator') body = <OperatorPage info={info} />;
  else if (page === 'kataconfigs' && arg === '~new') body = <CreateKataConfig />;
  // Keyed by name: what one KataConfig's page remembers (the nodes seen uninstalling) is not another's.
  else if (page === 'kataconfigs' && arg) body = <KataConfigDetail key={arg} name={arg} tab={route[2] ?? 'details'} />;
  else if (page === 'peerpods') body = <PeerPodsPage kcs={kcs.items} />;
  else if (page === 'metrics') body = <MetricsPage />;
  else if (page === 'workloads') body = <WorkloadsPage kcs={kcs.items} />;
  return (
    <div class="shell">
      <header>
        <span class="brand">OpenShift sandboxed containers</span>
        <nav aria-label="Console pages">
          {tab('operator', 'Operator')}
          {tab('kataconfigs', 'KataConfig')}
          {tab('workloads', 'Workloads')}
          {peerPods && tab('peerpods', 'Peer pods')}
          {tab('metrics', 'Metrics')}
        </nav>
        <span class="who" title={info?.server}>
          {info ? `${info.context} · ${info.user}` : ''}
        </span>
      </header>
      {!link.connected && <Disconnected link={link} />}
      <main class={link.connected ? '' : 'stale'} inert={!link.connected} aria-busy={!link.connected}>
        {body}
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
