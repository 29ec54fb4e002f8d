import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { stringify } from 'yaml';
import { go, kube, statusMessage } from './api.ts';
import {
  initialForm,
  KATACONFIG_API,
  type KataConfigForm,
  kataConfigFromForm,
  type MatchExpression,
  OPERATORS,
  type Operator,
  placeErrors,
  type Status,
} from './model.ts';

const LOG_LEVEL_HINTS = ['info', 'debug', 'warn', 'error', 'fatal', 'panic', 'trace'];

/** Messages the API server gave for one field, shown under it. */
function FieldError({ errors, id }: { errors: Record<string, string[]>; id: string }) {
  const msgs = errors[id];
  if (!msgs?.length) return null;
  return (
    <div class="field-error" data-field-error={id}>
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
      {props.help && <div class="help">{props.help}</div>}
      <FieldError errors={props.errors} id={props.id} />
    </div>
  );
}

/**
 * Create KataConfig: the fields and defaults of the documented form, the YAML it will create beside it.
 * Nothing is validated here: the API server decides, and a refusal shows at the field it names with the
 * form left as it was.
 */
export function CreateKataConfig() {
  const [form, setForm] = useState<KataConfigForm>(initialForm);
  const [errors, setErrors] = useState<{ fields: Record<string, string[]>; general: string[] }>({ fields: {}, general: [] });
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<KataConfigForm>) => setForm((f) => ({ ...f, ...patch }));
  const setExpr = (i: number, patch: Partial<MatchExpression>) =>
    setForm((f) => ({ ...f, matchExpressions: f.matchExpressions.map((e, j) => (j === i ? { ...e, ...patch } : e)) }));
  const object = kataConfigFromForm(form);

  const create = async (ev: Event) => {
    ev.preventDefault();
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
          {errors.general.length > 0 && (
            <div class="error" data-test="form-error">
              {errors.general.map((m) => (
                <div key={m}>{m}</div>
              ))}
            </div>
          )}
          <Field label="Name" id="name" errors={fe}>
            <input id="f-name" name="name" value={form.name} onInput={(e) => set({ name: e.currentTarget.value })} />
          </Field>
          <Field label="Labels" id="labels" help="key=value pairs, separated by commas or spaces" errors={fe}>
            <input
              id="f-labels"
              name="labels"
              placeholder="app=frontend"
              value={form.labels}
              onInput={(e) => set({ labels: e.currentTarget.value })}
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
                    <input id={`f-matchExpressions.${i}.key`} value={e.key} onInput={(ev) => setExpr(i, { key: ev.currentTarget.value })} />
                  </Field>
                  <Field label="operator" id={`matchExpressions.${i}.operator`} errors={fe}>
                    <select
                      id={`f-matchExpressions.${i}.operator`}
                      value={e.operator}
                      onChange={(ev) => setExpr(i, { operator: ev.currentTarget.value as Operator })}
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
          </details>
          <Field label="logLevel" id="logLevel" help="CRI-O log level on the nodes running kata" errors={fe}>
            <input
              id="f-logLevel"
              name="logLevel"
              list="log-levels"
              value={form.logLevel}
              onInput={(e) => set({ logLevel: e.currentTarget.value })}
            />
            <datalist id="log-levels">
              {LOG_LEVEL_HINTS.map((l) => (
                <option key={l} value={l} />
              ))}
            </datalist>
          </Field>
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
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
        </aside>
      </div>
    </section>
  );
}
