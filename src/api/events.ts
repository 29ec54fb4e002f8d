import { CAA_DAEMONSET, KATA_REMOTE_RUNTIME_CLASS, PEER_POD_CONFIG, PEER_POD_VM_RESOURCE } from './names.ts';

/**
 * The notes of the events osc records on a KataConfig (`kubectl describe kataconfig`, docs/kataconfig.md).
 * A phase change's event carries the InProgress condition's message (`messages` in kataconfig.ts); these
 * are the others. `rt` is kata or kata-remote.
 */
export const eventNotes = {
  /** Reason Installed: the rollout is done and the RuntimeClass exists. */
  installed: (rt: string, readyNodes: number | string) => `${rt} is installed on ${readyNodes} node(s); RuntimeClass "${rt}" is available`,
  /** Reason Uninstalled: the last of kata is gone, the KataConfig goes next. */
  uninstalled: (rt: string) => `${rt} was removed from the cluster`,
  /** A phase with no message of its own. */
  progressing: (kataConfig: string | undefined) => `KataConfig ${kataConfig}`,
  /** Reason PeerPodsRemovalBlocked: enablePeerPods turned off while pods still use kata-remote. */
  peerPodsRemovalBlocked: () =>
    `Existing pods using "${KATA_REMOTE_RUNTIME_CLASS}" RuntimeClass found. Please delete the pods manually for peer pods to be disabled`,
  /** Reason PeerPodsRemoved. */
  peerPodsRemoved: () => `Removed the peer pods components (${CAA_DAEMONSET}, ${PEER_POD_CONFIG}, ${PEER_POD_VM_RESOURCE} on the nodes)`,
};
