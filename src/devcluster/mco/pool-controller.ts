import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { objectName } from '../../api/meta.ts';
import { MCO_CURRENT_CONFIG, MCO_DESIRED_CONFIG, MCO_REASON, MCO_STATE } from '../../api/names.ts';
import {
  type ContainerRuntimeConfig,
  type MachineConfig,
  type MachineConfigPool,
  MachineConfigPools,
  MachineConfigs,
} from '../../api/openshift.ts';
import type { KubeClient } from '../../kube/client.ts';
import { isAlreadyExists, isNotFound } from '../../kube/errors.ts';
import { type Node, Nodes } from '../../kube/resources.ts';
import type { OwnerReference } from '../../kube/types.ts';
import { mapLimit } from '../../runtime/concurrency.ts';
import type { Informer } from '../../runtime/informer.ts';
import { CONTROLLER_MANAGER, normalize } from './crc-controller.ts';
import type { PoolMembership } from './membership.ts';
import { annotation } from './node-state.ts';
import { computePoolStatus, reportsUpdating, selectCandidates } from './pool-status.ts';
import {
  CONTROLLER_VERSION,
  GENERATED_BY_CONTROLLER_ANNOTATION,
  type GeneratedMC,
  generatedMachineConfigs,
  isRenderedMC,
  MCO_API_VERSION,
  ownerOf,
  RELEASE_IMAGE_VERSION_ANNOTATION,
  RELEASE_VERSION,
  type RenderOk,
  type RenderResult,
  renderPool,
} from './render.ts';
import type { LatestView } from './view.ts';

export interface PoolControllerContext {
  client: KubeClient;
  log: Logger;
  nodeView: LatestView<Node>;
  poolView: LatestView<MachineConfigPool>;
  mcView: LatestView<MachineConfig>;
  /** MachineConfigs, indexed by 'owner' (`<kind>/<name>`). */
  machineConfigs: Informer<MachineConfig>;
  containerRuntimeConfigs: Informer<ContainerRuntimeConfig>;
  membership: PoolMembership;
  /** A write to a node succeeded: here is the answer. */
  nodeWritten(node: Node): void;
  stats: { poolReconciles: number; renders: number; nodeWrites: number; poolStatusWrites: number };
}

/**
 * The render controller and the node controller, per pool: the pool's configuration rendered and written
 * to `spec.configuration`; a new target reported on the pool (`Updating`) before any node is handed it;
 * then at most `maxUnavailable` nodes at a time given it as their `desiredConfig`; the status recomputed.
 */
export class PoolController {
  private readonly ctx: PoolControllerContext;
  /** Bumped whenever something that rendering reads changes. */
  private renderEpoch = 0;
  private generatedCache: { epoch: number; list: GeneratedMC[] } | undefined;
  private readonly renderCache = new Map<string, { key: string; result: RenderResult }>();

  constructor(ctx: PoolControllerContext) {
    this.ctx = ctx;
  }

  /** Something rendering reads changed (a MachineConfig, a ContainerRuntimeConfig, a pool's labels). */
  invalidateRender(): void {
    this.renderEpoch++;
  }

  /** Every generated MachineConfig that should exist (cached until something rendering reads changes). */
  generated(): GeneratedMC[] {
    if (this.generatedCache?.epoch !== this.renderEpoch) {
      this.generatedCache = {
        epoch: this.renderEpoch,
        list: generatedMachineConfigs(this.ctx.containerRuntimeConfigs.list(), [...this.ctx.poolView.values()]),
      };
    }
    return this.generatedCache.list;
  }

  private render(pool: MachineConfigPool): RenderResult {
    const name = objectName(pool);
    const key = `${this.renderEpoch}|${JSON.stringify(pool.spec?.machineConfigSelector ?? null)}`;
    const cached = this.renderCache.get(name);
    if (cached?.key === key) return cached.result;
    this.ctx.stats.renders++;
    const result = renderPool(pool, this.ctx.mcView.values(), this.generated());
    this.renderCache.set(name, { key, result });
    return result;
  }

  /** One pool's sync: render, initialise new nodes, hand the target out, report the status. */
  async sync(name: string, signal: AbortSignal): Promise<void> {
    this.ctx.stats.poolReconciles++;
    let pool = this.ctx.poolView.get(name);
    if (!pool) {
      // What the garbage collector does for the pool's rendered configs.
      for (const mc of this.ctx.machineConfigs.byIndex('owner', `MachineConfigPool/${name}`)) {
        if (isRenderedMC(mc)) await this.ctx.client.delete(MachineConfigs, objectName(mc), { signal });
      }
      this.renderCache.delete(name);
      return;
    }
    if (pool.metadata.deletionTimestamp) return;

    const rendered = this.render(pool);
    if ('name' in rendered) {
      await this.ensureRenderedMachineConfig(pool, rendered, signal);
      const conf = pool.spec?.configuration;
      if (conf?.name !== rendered.name || !isDeepStrictEqual(conf?.source ?? [], rendered.source)) {
        let patched: MachineConfigPool;
        try {
          patched = await this.ctx.client.patch(
            MachineConfigPools,
            name,
            { spec: { configuration: { name: rendered.name, source: rendered.source } } },
            { signal, fieldManager: CONTROLLER_MANAGER },
          );
        } catch (e) {
          // Deleted since our cache last saw it (an uninstall deletes a pool right after its MachineConfig):
          // routine; its deletion event brings the garbage collection here.
          if (isNotFound(e)) return;
          throw e;
        }
        this.ctx.log.info({ pool: name, config: rendered.name }, 'rendered a new configuration');
        this.ctx.poolView.observe(patched);
        pool = this.ctx.poolView.get(name) ?? patched;
      }
    }

    const renderError = 'error' in rendered ? rendered.error : undefined;
    const target = pool.spec?.configuration?.name;
    const memberNames = this.ctx.membership.nodesOf(name);
    if (target) {
      await this.initializeNodes(memberNames, target, signal);
      const candidates = selectCandidates(pool, this.memberNodes(memberNames), target);
      if (candidates.length > 0) {
        // The pool says it is updating before any node is handed the new config, as the real one does.
        if (!reportsUpdating(pool.status, target)) {
          const announced = await this.writePoolStatus(pool, memberNames, renderError, signal);
          if (!announced) return;
          pool = announced;
        }
        await mapLimit(candidates, 16, (n) => {
          this.ctx.log.info({ pool: name, node: n.metadata.name, config: target }, 'setting node desired config');
          return this.patchNode(objectName(n), { metadata: { annotations: { [MCO_DESIRED_CONFIG]: target } } }, signal);
        });
      }
    } else if (!renderError) {
      return;
    }
    await this.writePoolStatus(pool, memberNames, renderError, signal);
  }

  private memberNodes(names: readonly string[]): Node[] {
    const nodes: Node[] = [];
    for (const n of names) {
      const node = this.ctx.nodeView.get(n);
      if (node) nodes.push(node);
    }
    return nodes;
  }

  private async ensureRenderedMachineConfig(pool: MachineConfigPool, r: RenderOk, signal: AbortSignal): Promise<void> {
    const owner: OwnerReference = {
      apiVersion: MCO_API_VERSION,
      kind: 'MachineConfigPool',
      name: objectName(pool),
      uid: pool.metadata.uid ?? '',
      controller: true,
      blockOwnerDeletion: true,
    };
    const existing = this.ctx.mcView.get(r.name);
    if (existing) {
      if (ownerOf(existing, 'MachineConfigPool')?.uid !== owner.uid) {
        try {
          this.ctx.mcView.observe(
            await this.ctx.client.patch(
              MachineConfigs,
              r.name,
              { metadata: { ownerReferences: [owner] } },
              { signal, fieldManager: CONTROLLER_MANAGER },
            ),
          );
        } catch (e) {
          // Deleted meanwhile: its deletion event brings us back to create it.
          if (!isNotFound(e)) throw e;
        }
      }
      return;
    }
    try {
      const created = await this.ctx.client.create(
        MachineConfigs,
        {
          metadata: {
            name: r.name,
            annotations: { [GENERATED_BY_CONTROLLER_ANNOTATION]: CONTROLLER_VERSION, [RELEASE_IMAGE_VERSION_ANNOTATION]: RELEASE_VERSION },
            ownerReferences: [owner],
          },
          spec: r.spec,
        },
        { signal, fieldManager: CONTROLLER_MANAGER },
      );
      this.ctx.mcView.observe(created);
    } catch (e) {
      if (!isAlreadyExists(e)) throw e;
    }
  }

  /** A node that joined without MCO annotations booted the pool's target config (served by the MCS). */
  private async initializeNodes(memberNames: string[], target: string, signal: AbortSignal): Promise<void> {
    const fresh = memberNames.filter((n) => {
      const node = this.ctx.nodeView.get(n);
      return node && annotation(node, MCO_CURRENT_CONFIG) === undefined;
    });
    await mapLimit(fresh, 16, (n) =>
      this.patchNode(
        n,
        {
          metadata: { annotations: { [MCO_CURRENT_CONFIG]: target, [MCO_DESIRED_CONFIG]: target, [MCO_STATE]: 'Done', [MCO_REASON]: '' } },
        },
        signal,
      ),
    );
  }

  /** Writes the pool's status if it changed; answers the pool as it now is (undefined: it is gone). */
  private async writePoolStatus(
    pool: MachineConfigPool,
    memberNames: string[],
    renderError: string | undefined,
    signal: AbortSignal,
  ): Promise<MachineConfigPool | undefined> {
    const name = objectName(pool);
    const status = computePoolStatus(pool, {
      nodes: this.memberNodes(memberNames),
      renderError,
      conflicts: this.ctx.membership.conflictsOf(name),
    });
    if (isDeepStrictEqual(normalize(pool.status), normalize(status))) return pool;
    this.ctx.stats.poolStatusWrites++;
    try {
      const patched = await this.ctx.client.patch(
        MachineConfigPools,
        name,
        { status },
        { subresource: 'status', signal, fieldManager: CONTROLLER_MANAGER },
      );
      this.ctx.poolView.observe(patched);
      return this.ctx.poolView.get(name) ?? patched;
    } catch (e) {
      if (!isNotFound(e)) throw e;
      return undefined;
    }
  }

  private async patchNode(name: string, patch: unknown, signal: AbortSignal): Promise<void> {
    try {
      const patched = await this.ctx.client.patch(Nodes, name, patch, { signal, fieldManager: CONTROLLER_MANAGER });
      this.ctx.stats.nodeWrites++;
      this.ctx.nodeWritten(patched);
    } catch (e) {
      if (!isNotFound(e)) throw e;
    }
  }
}
