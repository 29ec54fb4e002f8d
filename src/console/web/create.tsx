import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { stringify } from 'yaml';
import type { OpenAPISchema } from '../../api/schema.ts';
import { go, type KubeObj, kube, statusMessage, useLink, useWatch } from './api.ts';
import { ConfidentialPanel } from './confidential.tsx';
import {
  initialForm,
  KATACONFIG_API,
  type KataConfigForm,
  kataConfigFromForm,
  type MatchExpression,
  OPERATORS,
  type Operator,
  placeErrors,
  placeProblems,
  type Status,
  selectorText,
} from './model.ts';
import { checkKataConfig } from './validate.ts';

/** The KataConfig CRD's spec schema, put into the bundle when the console builds it (src/console/bundle.ts). */
declare const OSC_KATACONFIG_SPEC_SCHEMA: OpenAPISchema;
const SPEC_SCHEMA = OSC_KATACONFIG_SPEC_SCHEMA;
const LOG_LEVELS = (SPEC_SCHEMA.properties?.logLevel?.enum ?? []) as string[];

/** Messages the API server gave for one field, shown under it. */
function FieldError({ errors, id }: { errors: Record<string, string[]>; id: string }) {
  const msgs = errors[id];
  if (!msgs?.length) return null;
  return (
    <div class="field-error" data-field-error={id} id={`e-${id}`}>
      {msgs.map((m) => (
        <div key={m}>{m}</div>
      ))}
    </div>
  );
}

function Field(props: { label: string; id: string; help?: string; errors: Record<string, string[]>; children: ComponentChildren }) {
  return (
    <div class={`field${props.errors[props.id] ? ' invalid' : ''}`}>
      <label for={`f-${props.id}`}>{props.label}</label>
      {props.children}
      {props.help && (
        <div class="help" id={`h-${props.id}`}>
          {props.help}
        </div>
      )}
      <FieldError errors={props.errors} id={props.id} />
    </div>
  );
}

/** The accessibility attributes of an input with an id: invalid or not, described by its help and errors. */
const described = (id: string, errors: Record<string, string[]>, help = false) => ({
  'aria-invalid': errors[id] ? ('true' as const) : undefined,
  'aria-describedby': [help ? `h-${id}` : '', errors[id] ? `e-${id}` : ''].filter(Boolean).join(' ') || undefined,
});

/**
 * Create KataConfig: the fields and defaults of the documented form, the YAML it will create beside it.
 * The form checks what it can itself (validate.ts), every field at once, in the API server's words, and
 * sends nothing while a check fails; what only the API server knows (a KataConfig that already exists,
 * an admission webhook) shows at the field it names, with the form left as it was.
 */
export function CreateKataConfig() {
  const [form, setForm] = useState<KataConfigForm>(initialForm);
  const [serverErrors, setErrors] = useState<{ fields: Record<string, string[]>; general: string[] }>({ fields: {}, general: [] });
  // Checks show once a submit was tried, then follow every edit.
  const [tried, setTried] = useState(false);
  const [busy, setBusy] = useState(false);
  const { connected } = useLink();
  // The nodes, for what a KataConfig created now would get of confidential containers.
  const nodes = useWatch<KubeObj>('/api/v1/nodes');
  const set = (patch: Partial<KataConfigForm>) => setForm((f) => ({ ...f, ...patch }));
  const setExpr = (i: number, patch: Partial<MatchExpression>) =>
    setForm((f) => ({ ...f, matchExpressions: f.matchExpressions.map((e, j) => (j === i ? { ...e, ...patch } : e)) }));
  const object = kataConfigFromForm(form);
  const problems = checkKataConfig(object as Parameters<typeof checkKataConfig>[0], SPEC_SCHEMA);
  const errors = tried && problems.length > 0 ? placeProblems(problems) : serverErrors;

  const create = async (ev: Event) => {
    ev.preventDefault();
    setTried(true);
    if (problems.length > 0) {
      setErrors({ fields: {}, general: [] });
      // The first field to fix gets the focus, so that a keyboard user lands on it.
      const first = Object.keys(placeProblems(problems).fields)[0];
      requestAnimationFrame(() => document.getElementById(`f-${first}`)?.focus());
      return;
    }
    setBusy(true);
    try {
      const r = await kube('POST', KATACONFIG_API, object);
      if (r.ok) {
        go(`kataconfigs/${encodeURIComponent(form.name)}`);
        return;
      }
      const s = (typeof r.body === 'object' ? r.body : { message: statusMessage(r.body, r.status), code: r.status }) as Status;
      setErrors(placeErrors(s));
    } catch (e) {
      setErrors({ fields: {}, general: [`the console did not answer: ${e}`] });
    } finally {
      setBusy(false);
    }
  };

  const fe = errors.fields;
  return (
    <section>
      <div class="titlebar">
        <h1>Create KataConfig</h1>
      </div>
      <div class="create">
        <form onSubmit={create} data-test="create-form">
          {tried && problems.length > 0 && (
            <div class="error" role="alert" data-test="form-problems">
              {problems.length === 1 ? '1 field needs a fix' : `${problems.length} fields need a fix`} before the KataConfig can be created.
            </div>
          )}
          {errors.general.length > 0 && (
            <div class="error" role="alert" data-test="form-error">
              {errors.general.map((m) => (
                <div key={m}>{m}</div>
              ))}
            </div>
          )}
          <Field label="Name" id="name" errors={fe}>
            <input
              id="f-name"
              name="name"
              value={form.name}
              onInput={(e) => set({ name: e.currentTarget.value })}
              {...described('name', fe)}
            />
          </Field>
          <Field label="Labels" id="labels" help="key=value pairs, separated by commas or spaces" errors={fe}>
            <input
              id="f-labels"
              name="labels"
              placeholder="app=frontend"
              value={form.labels}
              onInput={(e) => set({ labels: e.currentTarget.value })}
              {...described('labels', fe, true)}
            />
          </Field>
          <Field
            label="checkNodeEligibility"
            id="checkNodeEligibility"
            help="Use Node Feature Discovery to detect nodes eligible to run kata (not relevant for peer pods)"
            errors={fe}
          >
            <input
              type="checkbox"
              id="f-checkNodeEligibility"
              checked={form.checkNodeEligibility}
              onChange={(e) => set({ checkNodeEligibility: e.currentTarget.checked })}
            />
          </Field>
          <Field label="enablePeerPods" id="enablePeerPods" help="Run pod VMs in a public cloud (peer pods)" errors={fe}>
            <input
              type="checkbox"
              id="f-enablePeerPods"
              checked={form.enablePeerPods}
              onChange={(e) => set({ enablePeerPods: e.currentTarget.checked })}
            />
          </Field>
          <details class="group" open={form.matchExpressions.length > 0} data-test="pool-selector">
            <summary>kataConfigPoolSelector</summary>
            <div class="help">By default kata is installed on all worker nodes; select nodes by label to install it only on those.</div>
            <FieldError errors={fe} id="kataConfigPoolSelector" />
            <details class="group" open={form.matchExpressions.length > 0}>
              <summary>matchExpressions</summary>
              <div class="help">A list of label selector requirements; all must hold.</div>
              {form.matchExpressions.map((e, i) => (
                <div class="expr" key={i} data-expr={i}>
                  <FieldError errors={fe} id={`matchExpressions.${i}`} />
                  <Field label="key" id={`matchExpressions.${i}.key`} errors={fe}>
                    <input
                      id={`f-matchExpressions.${i}.key`}
                      value={e.key}
                      onInput={(ev) => setExpr(i, { key: ev.currentTarget.value })}
                      {...described(`matchExpressions.${i}.key`, fe)}
                    />
                  </Field>
                  <Field label="operator" id={`matchExpressions.${i}.operator`} errors={fe}>
                    <select
                      id={`f-matchExpressions.${i}.operator`}
                      value={e.operator}
                      onChange={(ev) => setExpr(i, { operator: ev.currentTarget.value as Operator })}
                      {...described(`matchExpressions.${i}.operator`, fe)}
                    >
                      {OPERATORS.map((o) => (
                        <option key={o} value={o}>
                          {o}
                        </option>
                      ))}
                    </select>
                  </Field>
                  <details class="group" open={e.values.length > 0}>
                    <summary>values</summary>
                    <FieldError errors={fe} id={`matchExpressions.${i}.values`} />
                    {e.values.map((v, j) => (
                      <Field key={j} label="Value" id={`matchExpressions.${i}.values.${j}`} errors={fe}>
                        <div class="row">
                          <input
                            id={`f-matchExpressions.${i}.values.${j}`}
                            value={v}
                            onInput={(ev) => setExpr(i, { values: e.values.map((x, k) => (k === j ? ev.currentTarget.value : x)) })}
                            {...described(`matchExpressions.${i}.values.${j}`, fe)}
                          />
                          <button type="button" class="link" onClick={() => setExpr(i, { values: e.values.filter((_, k) => k !== j) })}>
                            Remove value
                          </button>
                        </div>
                      </Field>
                    ))}
                    <button type="button" class="link" onClick={() => setExpr(i, { values: [...e.values, ''] })}>
                      Add value
                    </button>
                  </details>
                  <button
                    type="button"
                    class="link"
                    onClick={() => set({ matchExpressions: form.matchExpressions.filter((_, k) => k !== i) })}
                  >
                    Remove matchExpressions
                  </button>
                </div>
              ))}
              <button
                type="button"
                class="link"
                onClick={() => set({ matchExpressions: [...form.matchExpressions, { key: '', operator: 'In', values: [] }] })}
              >
                Add matchExpressions
              </button>
            </details>
            <div class="selector-text" data-test="selector-text">
              {form.matchExpressions.length === 0
                ? 'Selects: all worker nodes'
                : `Selects worker nodes where: ${selectorText({ matchExpressions: form.matchExpressions })}`}
            </div>
          </details>
          <Field label="logLevel" id="logLevel" help="CRI-O log level on the nodes running kata" errors={fe}>
            <select
              id="f-logLevel"
              name="logLevel"
              value={form.logLevel}
              onChange={(e) => set({ logLevel: e.currentTarget.value })}
              {...described('logLevel', fe, true)}
            >
              {LOG_LEVELS.map((l) => (
                <option key={l} value={l}>
                  {l}
                </option>
              ))}
            </select>
          </Field>
          <div class="actions">
            <button type="submit" class="primary" disabled={busy || !connected}>
              Create
            </button>
            <a class="button" href="#/kataconfigs">
              Cancel
            </a>
          </div>
        </form>
        <aside>
          <h2>YAML</h2>
          <pre class="yaml" data-test="yaml-preview">
            {stringify(object, { lineWidth: 0 })}
          </pre>
          <ConfidentialPanel nodes={nodes.items} outlook />
        </aside>
      </div>
    </section>
  );
}
