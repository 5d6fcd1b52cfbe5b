// Shared pieces: loading data, showing problems in plain words, forms.
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { ApiProblem } from "./api/client";

export type Loaded<T> = { data?: T; problem?: ApiProblem; loading: boolean; reload: () => void };

/** Loads with LOAD when DEPS change, and every POLL ms if given. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], poll?: number): Loaded<T> {
  const [state, setState] = useState<{ data?: T; problem?: ApiProblem; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (problem) => mine === generation.current && setState((s) => ({ data: s.data, problem: toProblem(problem), loading: false })),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  useEffect(() => {
    setState({ loading: true });
    run();
    if (!poll) return () => generation.current++;
    const timer = setInterval(run, poll);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [run, poll]);
  return { ...state, reload: run };
}

export function toProblem(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return error;
  if (error instanceof Error) return new ApiProblem(0, error.message, null, null);
  return new ApiProblem(0, "Something went wrong", String(error), null);
}

export function ProblemNote({ problem }: { problem?: ApiProblem }) {
  if (!problem) return null;
  return (
    <div class="problem" role="alert">
      <strong>{problem.title}</strong>
      {problem.detail && <p>{problem.detail}</p>}
      {problem.status === 403 && <p>Your role does not allow this here.</p>}
    </div>
  );
}

/** What a LOADED shows: its problem, a loading line, or CHILDREN with the data. */
export function Show<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (loaded.data !== undefined) return <>{loaded.problem && <ProblemNote problem={loaded.problem} />}{children(loaded.data)}</>;
  if (loaded.problem) return <ProblemNote problem={loaded.problem} />;
  return <p class="muted" aria-live="polite">Loading…</p>;
}

/** A loaded list as a table: a row per item, headed by COLUMNS (and a last
 * column of buttons named for screen readers only, with ACTIONS), captioned
 * for screen readers; EMPTY said instead when there is none. */
export function ListTable<T>(props: {
  loaded: Loaded<T[]>;
  caption: string;
  empty: string;
  columns: string[];
  actions?: boolean;
  row: (item: T) => ComponentChildren;
}) {
  return (
    <Show loaded={props.loaded}>
      {(list) =>
        list.length === 0 ? (
          <p>{props.empty}</p>
        ) : (
          <table>
            <caption class="sr-only">{props.caption}</caption>
            <thead>
              <tr>
                {props.columns.map((column) => <th scope="col">{column}</th>)}
                {props.actions && <th scope="col"><span class="sr-only">Actions</span></th>}
              </tr>
            </thead>
            <tbody>{list.map((item) => props.row(item))}</tbody>
          </table>
        )
      }
    </Show>
  );
}

/** A form that calls ACTION, shows its problem, and says DONE when it worked. */
export function ActionForm(props: {
  label: string;
  submit: string;
  action: (data: FormData) => Promise<unknown>;
  done?: (result: unknown) => void;
  children?: ComponentChildren;
  class?: string;
}) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem>();
  return (
    <form
      class={props.class ?? "action"}
      aria-label={props.label}
      onSubmit={async (event) => {
        event.preventDefault();
        const form = event.currentTarget;
        setBusy(true);
        setProblem(undefined);
        try {
          const result = await props.action(new FormData(form));
          form.reset();
          props.done?.(result);
        } catch (error) {
          setProblem(toProblem(error));
        } finally {
          setBusy(false);
        }
      }}
    >
      {props.children}
      <button type="submit" disabled={busy}>
        {props.submit}
      </button>
      <ProblemNote problem={problem} />
    </form>
  );
}

/** A button that calls ACTION, with its problem beside it. */
export function ActionButton(props: { label: string; action: () => Promise<unknown>; done?: () => void; class?: string; confirm?: string }) {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<ApiProblem>();
  return (
    <span class="action-button">
      <button
        type="button"
        class={props.class}
        disabled={busy}
        onClick={async () => {
          if (props.confirm && !confirm(props.confirm)) return;
          setBusy(true);
          setProblem(undefined);
          try {
            await props.action();
            props.done?.();
          } catch (error) {
            setProblem(toProblem(error));
          } finally {
            setBusy(false);
          }
        }}
      >
        {props.label}
      </button>
      <ProblemNote problem={problem} />
    </span>
  );
}

export function Field(props: { label: string; name: string; type?: string; required?: boolean; placeholder?: string; value?: string; autocomplete?: string; minLength?: number }) {
  const id = `f-${props.name}-${useId()}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input
        id={id}
        name={props.name}
        type={(props.type ?? "text") as "text"}
        required={props.required}
        placeholder={props.placeholder}
        value={props.value}
        autocomplete={props.autocomplete ?? "off"}
        minLength={props.minLength}
      />
    </div>
  );
}

export function Select(props: { label: string; name: string; options: string[]; value?: string }) {
  const id = `s-${props.name}-${useId()}`;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select id={id} name={props.name} value={props.value}>
        {props.options.map((option) => (
          <option value={option}>{option}</option>
        ))}
      </select>
    </div>
  );
}

let ids = 0;
function useId(): number {
  const id = useRef(0);
  if (!id.current) id.current = ++ids;
  return id.current;
}

/** A state as a word with its colour class: ok, wait, bad. */
export function Badge({ tone, children }: { tone: "ok" | "wait" | "bad" | "none"; children: ComponentChildren }) {
  return <span class={`badge badge-${tone}`}>{children}</span>;
}

export function when(ms?: number | string | null): string {
  if (ms === null || ms === undefined || ms === "") return "—";
  const date = typeof ms === "number" ? new Date(ms) : new Date(ms);
  if (isNaN(date.getTime())) return String(ms);
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function text(data: FormData, name: string): string {
  return String(data.get(name) ?? "").trim();
}
