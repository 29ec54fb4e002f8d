/**
 * The simulated host side of kata-deploy: protocol.ts (the installer's labels, command line and
 * environment, as the real one has them), core.ts (one pod's process as a pure step) and simulator.ts
 * (the executor over informers).
 */
export { DEFAULT_INSTALL_FAILURE, FAIL_NEXT_UPDATE_ANNOTATION, type InstallerTiming, installerStep, podStatusFor } from './core.ts';
export {
  DEFAULT_INSTALLER_REPOSITORIES,
  INSTANCE_LABEL_PREFIX,
  imageRepository,
  installerPodQuery,
  KATA_RUNTIME_LABEL,
} from './protocol.ts';
export { DEFAULT_TIMING, KataDeploySimulator, type KataDeploySimulatorOptions } from './simulator.ts';
