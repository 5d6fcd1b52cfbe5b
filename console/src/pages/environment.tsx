import { api, ok, type Schemas } from "../api/client";
import { may } from "../permissions";
import { Link, seg } from "../router";
import { useMe } from "../session";
import { ActionButton, ActionForm, Badge, Field, ListTable, Show, useLoad, text } from "../ui";
import { Crumbs, envState } from "./project";

type EnvProps = { project: string; environment: string };

const APP = "/api/v1/projects/{project}/environments/{environment}/apps/{app}" as const;

// What an environment's quota holds it to when it names no storage or
// number of volumes (shared/cluster/src/quota.rs, applied by the controller's
// `berth-quota`): the record carries only what was asked for.
const DEFAULT_STORAGE = "1Ti";
const DEFAULT_VOLUMES = 20;

/** The environment's quota in words, with the platform's defaults for what it leaves out. */
export function quotaWords(quota: Schemas["Quota"] | null | undefined): string {
  const storage = quota?.storage ?? DEFAULT_STORAGE;
  const volumes = quota?.volumes ?? DEFAULT_VOLUMES;
  const defaulted = (value: unknown) => (value === null || value === undefined ? " (default)" : "");
  const claims = `at most ${volumes} volumes${defaulted(quota?.volumes)} with ${storage} of storage together${defaulted(quota?.storage)}`;
  if (!quota) return `No quota set: the platform's defaults apply. CPU, memory and pods are not capped; ${claims}.`;
  const part = (what: string, value: string | number | null | undefined) => (value === null || value === undefined ? `${what} not capped` : `${what} ${value}`);
  return `Quota: ${part("CPU", quota.cpu)}, ${part("memory", quota.memory)}, ${part("pods", quota.pods)}; ${claims}.`;
}

/** The app's pods of long-running processes that are ready, of them all, as the app's page counts them. */
function podsReady(detail: Schemas["AppDetail"]): string {
  const scheduled = new Set(detail.app.processes.filter((p) => p.schedule).map((p) => p.name));
  const pods = detail.pods.filter((pod) => !pod.process || !scheduled.has(pod.process));
  return `${pods.filter((pod) => pod.ready).length}/${pods.length}`;
}

export function appState(a: Schemas["AppRecord"]) {
  if (a.ready) return <Badge tone="ok">available</Badge>;
  if (a.reason && /fail|error|crash|backoff|deadline/i.test(a.reason)) return <Badge tone="bad">{a.reason}</Badge>;
  return <Badge tone="wait">{a.reason ?? "rolling out"}</Badge>;
}

export function EnvironmentPage({ project, environment }: EnvProps) {
  const me = useMe();
  const path = { project, environment };
  const env = useLoad(() => ok(api.GET("/api/v1/projects/{project}/environments/{environment}", { params: { path } })), [project, environment], 5000);
  const apps = useLoad(() => ok(api.GET("/api/v1/projects/{project}/environments/{environment}/apps", { params: { path } })), [project, environment], 3000);
  // The list has no pods: each app's own (getApp, as its page reads them),
  // asked in parallel at the list's pace. One that fails shows as unknown.
  const names = (apps.data ?? []).map((a) => a.name).join("\u0000");
  const pods = useLoad(
    async () => {
      const settled = await Promise.allSettled(
        names ? names.split("\u0000").map((app) => ok(api.GET(APP, { params: { path: { ...path, app } } }))) : [],
      );
      const ready = new Map<string, string>();
      for (const s of settled) if (s.status === "fulfilled") ready.set(s.value.app.name, podsReady(s.value));
      return ready;
    },
    [project, environment, names],
    3000,
  );
  const base = `/projects/${seg(project)}/environments/${seg(environment)}`;
  return (
    <>
      <Crumbs project={project} environment={environment} />
      <h1>
        {project} / {environment}
      </h1>
      <Show loaded={env}>
        {(e) => (
          <>
            <p>
              {e.env_type} environment, {envState(e)} {e.message && <span class="muted">{e.message}</span>}
              {e.deleting && e.env_type === "production" && may(me, "env-delete-protected", project) && (
                <>
                  {" "}
                  <ActionButton
                    label="Restore this environment"
                    action={() => ok(api.POST("/api/v1/projects/{project}/environments/{environment}/restore", { params: { path } }))}
                    done={env.reload}
                  />
                </>
              )}
              {!e.deleting && may(me, e.env_type === "production" ? "env-delete-protected" : "env-write", project) && (
                <>
                  {" "}
                  <ActionButton
                    label="Delete this environment"
                    class="danger"
                    confirm={
                      e.env_type === "production"
                        ? `Delete ${environment}? A production environment can be restored until its purge.`
                        : `Delete ${environment} and everything in it, at once?`
                    }
                    action={() => ok(api.DELETE("/api/v1/projects/{project}/environments/{environment}", { params: { path } }))}
                    done={env.reload}
                  />
                </>
              )}
            </p>
            <p data-testid="quota">{quotaWords(e.quota)}</p>
          </>
        )}
      </Show>
      <h2>Apps</h2>
      <ListTable
        loaded={apps}
        caption="Apps"
        empty="No apps yet."
        columns={["App", "Status", "Pods ready", "Revision", "Image", "URL"]}
        row={(a) => (
          <tr>
            <td><Link href={`${base}/apps/${seg(a.name)}`}>{a.name}</Link></td>
            <td>{appState(a)}</td>
            <td data-testid={`pods-${a.name}`}>{pods.data?.get(a.name) ?? "—"}</td>
            <td>{a.revision}{a.running_revision !== undefined && a.running_revision !== a.revision ? ` (running ${a.running_revision ?? "none"})` : ""}</td>
            <td><code>{a.image ?? a.git_repo ?? "—"}</code></td>
            <td>{a.url ? <a href={a.url}>{a.url}</a> : "—"}</td>
          </tr>
        )}
      />
      {may(me, "app-write", project) && (
        <>
          <h2>New app</h2>
          <ActionForm
            label="New app"
            submit="Create app"
            action={(data) => {
              const port = Number(text(data, "port"));
              const repo = text(data, "git_repo");
              return ok(
                api.POST("/api/v1/projects/{project}/environments/{environment}/apps", {
                  params: { path },
                  body: {
                    name: text(data, "name"),
                    image: text(data, "image") || undefined,
                    git_repo: repo || undefined,
                    port: port > 0 ? port : undefined,
                  },
                }),
              );
            }}
            done={apps.reload}
          >
            <Field label="Name" name="name" required placeholder="web" />
            <Field label="Image" name="image" placeholder="nginx:1.27" />
            <Field label="Or a git repository" name="git_repo" placeholder="https://github.com/you/app.git" />
            <Field label="Port (optional)" name="port" type="number" />
          </ActionForm>
          <p>
            Or start from a <Link href={`/templates?project=${seg(project)}&environment=${seg(environment)}`}>template</Link>.
          </p>
        </>
      )}
      <Secrets project={project} environment={environment} />
    </>
  );
}

function Secrets({ project, environment }: EnvProps) {
  const me = useMe();
  const path = { project, environment };
  const secrets = useLoad(() => ok(api.GET("/api/v1/projects/{project}/environments/{environment}/secrets", { params: { path } })), [project, environment]);
  return (
    <section aria-labelledby="secrets">
      <h2 id="secrets">Secrets</h2>
      <p>Names and keys only: values are never shown.</p>
      <ListTable
        loaded={secrets}
        caption="Secrets"
        empty="No secrets."
        columns={["Secret", "Keys"]}
        actions
        row={(s) => (
          <tr>
            <td>{s.name}</td>
            <td>{s.keys.join(", ")}</td>
            <td>
              {may(me, "secret-write", project) && (
                <ActionButton
                  label={`Delete ${s.name}`}
                  class="danger"
                  confirm={`Delete the secret ${s.name}?`}
                  action={() =>
                    ok(api.DELETE("/api/v1/projects/{project}/environments/{environment}/secrets/{secret}", { params: { path: { ...path, secret: s.name } } }))
                  }
                  done={secrets.reload}
                />
              )}
            </td>
          </tr>
        )}
      />
      {may(me, "secret-write", project) && (
        <>
          <h3>Set or replace a secret</h3>
          <p>A secret is replaced whole: give every key it should keep. Apps using it restart.</p>
          <ActionForm
            label="Set a secret"
            submit="Save secret"
            action={(data) => {
              const entries: Record<string, string> = {};
              for (const line of text(data, "data").split("\n")) {
                const at = line.indexOf("=");
                if (at > 0) entries[line.slice(0, at).trim()] = line.slice(at + 1);
              }
              if (Object.keys(entries).length === 0) throw new Error("Give at least one KEY=value line.");
              return ok(
                api.PUT("/api/v1/projects/{project}/environments/{environment}/secrets/{secret}", {
                  params: { path: { ...path, secret: text(data, "name") } },
                  body: { data: entries },
                }),
              );
            }}
            done={secrets.reload}
          >
            <Field label="Secret name" name="name" required placeholder="database" />
            <div class="field">
              <label for="secret-data">Keys and values, one KEY=value a line</label>
              <textarea id="secret-data" name="data" rows={3} required autocomplete="off" spellcheck={false} />
            </div>
          </ActionForm>
        </>
      )}
    </section>
  );
}
