import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import './style.css';
import { type ConsoleInfo, type KataConfigObj, useGet, useWatch } from './api.ts';
import { CreateKataConfig } from './create.tsx';
import { KataConfigDetail } from './detail.tsx';
import { KataConfigList } from './list.tsx';
import { MetricsPage } from './metrics.tsx';
import { KATACONFIG_API } from './model.ts';
import { OperatorPage } from './operator.tsx';
import { PeerPodsPage } from './peerpods.tsx';

/** The hash is the page: #/kataconfigs/NAME survives a reload and works with the back button. */
function useRoute(): string[] {
  const read = () => (location.hash.replace(/^#\/?/, '') || 'kataconfigs').split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function App() {
  const route = useRoute();
  const info = useGet<ConsoleInfo>('/console/info').data;
  const kcs = useWatch<KataConfigObj>(KATACONFIG_API);
  const peerPods = kcs.items.some((k) => k.spec?.enablePeerPods);
  const [page, arg] = route;
  const tab = (id: string, label: string) => (
    <a href={`#/${id}`} class={page === id ? 'active' : ''} data-nav={id}>
      {label}
    </a>
  );
  let body = <KataConfigList kcs={kcs} />;
  if (page === 'operator') body = <OperatorPage info={info} />;
  else if (page === 'kataconfigs' && arg === '~new') body = <CreateKataConfig />;
  else if (page === 'kataconfigs' && arg) body = <KataConfigDetail name={arg} tab={route[2] ?? 'details'} />;
  else if (page === 'peerpods') body = <PeerPodsPage kcs={kcs.items} />;
  else if (page === 'metrics') body = <MetricsPage />;
  return (
    <div class="shell">
      <header>
        <span class="brand">OpenShift sandboxed containers</span>
        <nav>
          {tab('operator', 'Operator')}
          {tab('kataconfigs', 'KataConfig')}
          {peerPods && tab('peerpods', 'Peer pods')}
          {tab('metrics', 'Metrics')}
        </nav>
        <span class="who" title={info?.server}>
          {info ? `${info.context} · ${info.user}` : ''}
        </span>
      </header>
      <main>{body}</main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
