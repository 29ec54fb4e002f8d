import { memo } from 'preact/compat';
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
  const [focused, setFocused] = useState(0);
  const moveFocus = (e: KeyboardEvent) => {
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1, Home: -Infinity, End: Infinity }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    const next = Math.max(0, Math.min(tiles.length - 1, focused + step));
    const el = (e.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('.tile')[next];
    el?.focus();
  };
  // One handler for all the tiles (delegated), so that a status update re-renders only the tiles it changed.
  const pick = (e: MouseEvent) => {
    const node = (e.target as HTMLElement).closest<HTMLElement>('[data-node]')?.dataset.node;
    if (node) setPicked((p) => (p === node ? undefined : node));
  };
  const focusIn = (e: FocusEvent) => {
    const index = (e.target as HTMLElement).dataset.index;
    if (index !== undefined) setFocused(Number(index));
  };
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
      <fieldset class={`tiles${big ? ' big' : ''}`} data-test="tiles" onKeyDown={moveFocus} onClick={pick} onFocusIn={focusIn}>
        <legend class="sr-only">{`${tiles.length} nodes; arrow keys move between them, Enter shows one`}</legend>
        {tiles.map((t, i) => (
          <TileButton
            key={t.node}
            node={t.node}
            state={t.state}
            title={title(t)}
            picked={picked === t.node}
            tabbable={i === Math.min(focused, tiles.length - 1)}
            index={i}
            big={big}
          />
        ))}
      </fieldset>
      {pickedTile && <NodeDetails tile={pickedTile} node={nodes.get(pickedTile.node)} />}
    </div>
  );
}

interface TileProps {
  node: string;
  state: string;
  title: string;
  picked: boolean;
  tabbable: boolean;
  index: number;
  big: boolean;
}

/** One node's tile; memoised, so that of 1,000 tiles only those whose state changed are compared again. */
const TileButton = memo(
  (t: TileProps) => (
    <button
      type="button"
      class={`tile ${t.state}${t.picked ? ' picked' : ''}`}
      data-node={t.node}
      data-state={t.state}
      data-index={t.index}
      title={t.title}
      aria-label={t.title}
      aria-pressed={t.picked}
      // One tab stop for all the tiles (a thousand would make the page unusable by keyboard).
      tabIndex={t.tabbable ? 0 : -1}
    >
      {t.big ? t.node : ''}
    </button>
  ),
  (a, b) =>
    a.node === b.node &&
    a.state === b.state &&
    a.title === b.title &&
    a.picked === b.picked &&
    a.tabbable === b.tabbable &&
    a.index === b.index &&
    a.big === b.big,
);

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
