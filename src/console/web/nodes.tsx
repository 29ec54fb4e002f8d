import { useState } from 'preact/hooks';
import type { KubeObj } from './api.ts';
import { INSTALL_LEGEND, type Tile, tileCounts, tilesOf, UNINSTALL_LEGEND } from './model.ts';

const MCO = 'machineconfiguration.openshift.io/';

/** What the Machine Config Operator says about a node, for its tooltip and details. */
function mcoOf(node: KubeObj | undefined) {
  const a = node?.metadata.annotations ?? {};
  return {
    state: a[`${MCO}state`] ?? '',
    current: a[`${MCO}currentConfig`] ?? '',
    desired: a[`${MCO}desiredConfig`] ?? '',
    reason: a[`${MCO}reason`] ?? '',
  };
}

const readyOf = (node: KubeObj | undefined) => node?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready')?.status ?? '';

/**
 * The nodes of a rollout as coloured tiles, a few pixels each so that 1,000 fit on one screen; hovering
 * names the node and its state, a click shows what the MCO reports for it.
 */
export function NodeTiles(props: {
  kataNodes: Record<string, unknown> | undefined;
  nodes: Map<string, KubeObj>;
  /** While uninstalling: every node seen left to uninstall, so that finished ones keep their tile. */
  uninstalled?: ReadonlySet<string>;
  /** The rollout is stuck without nodes: say so instead of "not listed yet". */
  deadEnd?: boolean;
}) {
  const { kataNodes, nodes, uninstalled } = props;
  const tiles = tilesOf(kataNodes, uninstalled);
  const legend = uninstalled ? UNINSTALL_LEGEND : INSTALL_LEGEND;
  const counts = tileCounts(tiles);
  const [picked, setPicked] = useState<string | undefined>();
  const pickedTile = tiles.find((t) => t.node === picked);
  const big = tiles.length <= 60;
  const title = (t: Tile) => {
    const m = mcoOf(nodes.get(t.node));
    return `${t.node}: ${t.label}${m.state ? ` (MCO ${m.state})` : ''}`;
  };
  return (
    <div class="tiles-box">
      <div class="legend" data-test="tile-legend">
        {legend.map(([s, label]) => (
          <span key={s} class="legend-item" data-state={s} data-count={counts[s]}>
            <i class={`tile ${s}`} /> {label} {counts[s]}
          </span>
        ))}
        <span class="muted">{tiles.length} nodes</span>
      </div>
      {tiles.length === 0 && <p class="muted">{props.deadEnd ? 'No node is selected for kata (see above).' : 'No nodes listed yet.'}</p>}
      <div class={`tiles${big ? ' big' : ''}`} data-test="tiles">
        {tiles.map((t) => (
          <button
            type="button"
            key={t.node}
            class={`tile ${t.state}${picked === t.node ? ' picked' : ''}`}
            data-node={t.node}
            data-state={t.state}
            title={title(t)}
            aria-label={title(t)}
            onClick={() => setPicked(picked === t.node ? undefined : t.node)}
          >
            {big ? t.node : ''}
          </button>
        ))}
      </div>
      {pickedTile && <NodeDetails tile={pickedTile} node={nodes.get(pickedTile.node)} />}
    </div>
  );
}

function NodeDetails({ tile, node }: { tile: Tile; node: KubeObj | undefined }) {
  const m = mcoOf(node);
  const roles = Object.keys(node?.metadata.labels ?? {})
    .filter((l) => l.startsWith('node-role.kubernetes.io/'))
    .map((l) => l.slice('node-role.kubernetes.io/'.length));
  return (
    <dl class="node-details" data-test="node-details">
      <dt>Node</dt>
      <dd>{tile.node}</dd>
      <dt>Kata state</dt>
      <dd>
        {tile.label} <span class="muted">(status.kataNodes.{tile.list})</span>
      </dd>
      <dt>MCO state</dt>
      <dd>{m.state || '—'}</dd>
      <dt>Current config</dt>
      <dd>{m.current || '—'}</dd>
      <dt>Desired config</dt>
      <dd>{m.desired || '—'}</dd>
      {m.reason && (
        <>
          <dt>MCO reason</dt>
          <dd>{m.reason}</dd>
        </>
      )}
      <dt>Ready</dt>
      <dd>
        {readyOf(node) || '—'}
        {node?.spec?.unschedulable ? ' (cordoned)' : ''}
      </dd>
      <dt>Roles</dt>
      <dd>{roles.join(', ') || '—'}</dd>
    </dl>
  );
}
