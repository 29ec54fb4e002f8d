#!/usr/bin/env node
// `osc`: the OpenShift sandboxed containers command.
import { launch } from './launch.js';

await launch('osc');
