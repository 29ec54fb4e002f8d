import { stringify } from 'yaml';
import type { KubeObj } from './api.ts';

/** An object as `kubectl get -o yaml` shows it, without the managedFields noise. */
export function toYaml(obj: unknown, kind?: { apiVersion: string; kind: string }): string {
  const o = obj as KubeObj;
  const { managedFields: _m, ...metadata } = o.metadata ?? { name: '' };
  const shown = kind ? { apiVersion: kind.apiVersion, kind: kind.kind, ...o, metadata } : { ...o, metadata };
  return stringify(shown, { lineWidth: 0 });
}
