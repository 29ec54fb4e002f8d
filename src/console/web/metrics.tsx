import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, type ConsoleInfo, statusMessage } from './api.ts';
import { METRIC_PRESETS, matchMetricNames, stepFor } from './model.ts';

interface Series {
  metric: Record<string, string>;
  values: [number, string][];
}

const RANGE_SECONDS = 15 * 60;
const COLORS = ['#0066cc', '#3e8635', '#f0ab00', '#c9190b', '#8476d1', '#009596', '#ec7a08', '#6a6e73'];

const seriesLabel = (m: Record<string, string>) => {
  const { __name__: name, ...rest } = m;
  const labels = Object.entries(rest)
    .filter(([k]) => k !== 'job' && k !== 'instance')
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ');
  return labels ? `${name ?? ''}{${labels}}` : (name ?? '');
};

/**
 * Observe › Metrics: a ready-made query (the installation, the kata pods, leaked pod VMs, adaptor restarts),
 * or type `kata` to list the kata metrics and pick one (or write any PromQL), to plot the last 15 minutes,
 * refreshed every few seconds from Prometheus.
 */
export function MetricsPage() {
  const info = usePrometheusInfo();
  const [typed, setTyped] = useState('');
  const [query, setQuery] = useState('');
  const [names, setNames] = useState<string[]>([]);
  const [error, setError] = useState('');
  const [series, setSeries] = useState<Series[]>([]);

  // The names Prometheus knows now; read again whenever the field gets the focus (new metrics appear).
  const loadNames = () => {
    if (!info?.prometheus) return;
    api<{ data?: string[] }>('GET', '/prometheus/api/v1/label/__name__/values').then((r) =>
      r.ok ? setNames(r.body.data ?? []) : setError(statusMessage(r.body, r.status)),
    );
  };
  useEffect(loadNames, [info?.prometheus]);

  useEffect(() => {
    if (!query) return;
    let live = true;
    const load = async () => {
      const end = Date.now() / 1000;
      const params = new URLSearchParams({
        query,
        start: String(end - RANGE_SECONDS),
        end: String(end),
        step: String(stepFor(RANGE_SECONDS)),
      });
      const r = await api<{ data?: { result?: Series[] }; error?: string }>('GET', `/prometheus/api/v1/query_range?${params}`);
      if (!live) return;
      if (r.ok) {
        setSeries(r.body.data?.result ?? []);
        setError('');
      } else setError(r.body?.error ?? statusMessage(r.body, r.status));
    };
    load();
    const t = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [query]);

  if (info && !info.prometheus) {
    return (
      <section>
        <h1>Metrics</h1>
        <p class="notice" data-test="no-prometheus">
          {info.prometheusNote || 'No Prometheus is connected: start the console with --prometheus-url.'}
        </p>
      </section>
    );
  }
  const matches = typed === query ? [] : matchMetricNames(names, typed);
  return (
    <section>
      <div class="titlebar">
        <h1>Metrics</h1>
        <span class="muted">Prometheus {info?.prometheus}</span>
      </div>
      <form
        class="query"
        onSubmit={(e) => {
          e.preventDefault();
          setQuery(typed.trim());
        }}
      >
        <input
          id="metrics-query"
          class="query-input"
          onFocus={loadNames}
          placeholder="Expression (type kata to list the kata metrics)"
          value={typed}
          autocomplete="off"
          onInput={(e) => setTyped(e.currentTarget.value)}
        />
        <button type="submit" class="primary">
          Run query
        </button>
      </form>
      <div class="presets" data-test="metric-presets">
        {METRIC_PRESETS.map((p) => (
          <button
            key={p.id}
            type="button"
            class={query === p.query ? 'chip selected' : 'chip'}
            data-preset={p.id}
            title={p.query}
            onClick={() => {
              setTyped(p.query);
              setQuery(p.query);
            }}
          >
            {p.label}
          </button>
        ))}
      </div>
      {matches.length > 0 && (
        <ul class="suggestions" data-test="metric-names">
          {matches.map((n) => (
            <li key={n}>
              <button
                type="button"
                class="link"
                data-metric={n}
                onClick={() => {
                  setTyped(n);
                  setQuery(n);
                }}
              >
                {n}
              </button>
            </li>
          ))}
        </ul>
      )}
      {error && <p class="error">{error}</p>}
      {query && <Chart series={series} />}
      {query && series.length === 0 && !error && <p class="muted">No data yet for {query}.</p>}
    </section>
  );
}

/** The console's info, read again every few seconds while its Prometheus is still on its way. */
function usePrometheusInfo(): ConsoleInfo | undefined {
  const [info, setInfo] = useState<ConsoleInfo | undefined>();
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let live = true;
    const load = async () => {
      const r = await api<ConsoleInfo>('GET', '/console/info');
      if (!live) return;
      if (r.ok) setInfo(r.body);
      if (!r.ok || !r.body.prometheus) timer = setTimeout(load, 3000);
    };
    load();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, []);
  return info;
}

function Chart({ series }: { series: Series[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el || series.length === 0) return;
    // One shared time axis: the union of every series' timestamps.
    const times = [...new Set(series.flatMap((s) => s.values.map((v) => v[0])))].sort((a, b) => a - b);
    const index = new Map(times.map((t, i) => [t, i]));
    const data: (number | null)[][] = [times];
    for (const s of series) {
      const ys: (number | null)[] = new Array(times.length).fill(null);
      for (const [t, v] of s.values) ys[index.get(t) as number] = Number(v);
      data.push(ys);
    }
    const plot = new uPlot(
      {
        width: Math.max(400, el.clientWidth),
        height: 320,
        series: [
          {},
          ...series.map((s, i) => ({ label: seriesLabel(s.metric), stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false })),
        ],
        axes: [{}, { size: 60 }],
      },
      data as uPlot.AlignedData,
      el,
    );
    return () => plot.destroy();
  }, [series]);
  return <div class="chart" ref={box} data-test="chart" data-series={series.length} />;
}
