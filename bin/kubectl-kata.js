#!/usr/bin/env node
// `kubectl kata ...`: osc as a kubectl plugin. kubectl runs any executable named kubectl-<name> found on
// the PATH for `kubectl <name>`, passing the remaining arguments and its environment (KUBECONFIG) along.
import { launch } from './launch.js';

await launch('kubectl kata');
