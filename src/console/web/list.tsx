import { IN_PROGRESS } from '../../api/kataconfig.ts';
import { type KataConfigObj, useLink, useTick, type WatchState } from './api.ts';
import { age, conditionOf, headlineOf } from './model.ts';

const NONE: ReadonlySet<string> = new Set();

/** The KataConfig tab: the columns of `kubectl get kataconfig`, and Create KataConfig. */
export function KataConfigList({ kcs }: { kcs: WatchState<KataConfigObj> }) {
  const now = useTick(5000);
  const { connected } = useLink();
  return (
    <section>
      <div class="titlebar">
        <h1>KataConfigs</h1>
        <a
          class={`button primary${connected ? '' : ' disabled'}`}
          href={connected ? '#/kataconfigs/~new' : undefined}
          aria-disabled={!connected}
          data-test="create-kataconfig"
        >
          Create KataConfig
        </a>
      </div>
      {kcs.error && (
        <p class="error">
          {kcs.code === 404 ? 'The KataConfig API is not installed in this cluster: run "osc install" first.' : kcs.error}
        </p>
      )}
      {kcs.synced && kcs.items.length === 0 && !kcs.error && (
        <p class="muted">No KataConfigs found. Create one to install kata on the worker nodes.</p>
      )}
      {kcs.items.length > 0 && (
        <table class="list" data-test="kataconfig-list">
          <thead>
            <tr>
              <th>NAME</th>
              <th>IN PROGRESS</th>
              <th>COMPLETED</th>
              <th>TOTAL</th>
              <th>AGE</th>
            </tr>
          </thead>
          <tbody>
            {kcs.items.map((kc) => (
              <tr key={kc.metadata.name}>
                <td>
                  <a href={`#/kataconfigs/${encodeURIComponent(kc.metadata.name)}`}>{kc.metadata.name}</a>
                  {headlineOf(kc, NONE).deadEnd && (
                    <span class="badge warn" data-test="action-needed">
                      action needed
                    </span>
                  )}
                </td>
                <td>{conditionOf(kc, IN_PROGRESS)?.status ?? ''}</td>
                <td>{kc.status?.kataNodes?.readyNodeCount ?? ''}</td>
                <td>{kc.status?.kataNodes?.nodeCount ?? ''}</td>
                <td>{age(kc.metadata.creationTimestamp, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
