/**
 * The simulated Machine Config Operator: render.ts (rendering), membership.ts (which pool a node is in),
 * pool-status.ts (the node controller's status and candidate choice), daemon.ts and drain.ts (the
 * per-node daemon), crc-controller.ts, and operator.ts assembling them over informers.
 */
export { DEFAULT_FAILURE_REASON, FAIL_NEXT_UPDATE_ANNOTATION } from './daemon.ts';
export { isNodeDone, isNodeReady, isNodeUnavailable, maxUnavailableOf, type NodeState } from './node-state.ts';
export { MachineConfigOperator, type MachineConfigOperatorOptions } from './operator.ts';
export {
  CONTROLLER_VERSION,
  DEFAULT_OS_IMAGE_URL,
  GENERATED_BY_CONTROLLER_ANNOTATION,
  IGNITION_SPEC_VERSION,
  RELEASE_IMAGE_VERSION_ANNOTATION,
  RELEASE_VERSION,
} from './render.ts';
