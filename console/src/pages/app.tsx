import { useEffect, useRef, useState } from "preact/hooks";
import { api, ok, type Schemas } from "../api/client";
import { may } from "../permissions";
import { useMe } from "../session";
import { ActionButton, ActionForm, Badge, Field, ProblemNote, Show, text, toProblem, useLoad, when } from "../ui";
import type { ApiProblem } from "../api/client";
import { Crumbs } from "./project";
import { Link, seg } from "../router";
import { appState } from "./environment";

type AppProps = { project: string; environment: string; app: string };
/** How often what changes by itself is asked again: the CLI's `--follow` and `--wait` poll (cli/src/commands/follow.rs). */
const POLL_MS = 2000;
/** The most lines a log answer has per pod (the API's `tail` bound). */
const TAIL = 200;
/** The most lines kept on the page. */
const KEEP = 2000;

const APP = "/api/v1/projects/{project}/environments/{environment}/apps/{app}" as const;

function releaseTone(status: string): "ok" | "wait" | "bad" | "none" {
  if (status === "released") return "ok";
  if (status === "pending") return "wait";
  if (status === "failed" || status === "rolled_back") return "bad";
  return "none";
}

export function AppPage(props: AppProps) {
  const { project, environment, app } = props;
  const me = useMe();
  const path = props;
  const detail = useLoad(() => ok(api.GET(APP, { params: { path } })), [project, environment, app], POLL_MS);
  const releases = useLoad(() => ok(api.GET(`${APP}/releases`, { params: { path } })), [project, environment, app], POLL_MS);
  const [promoted, setPromoted] = useState<Schemas["AppRecord"]>();
  const [started, setStarted] = useState<Schemas["RunAnswer"]>();
  const reload = () => {
    detail.reload();
    releases.reload();
  };
  return (
    <>
      <Crumbs project={project} environment={environment} app={app} />
      <h1>{app}</h1>
      <Show loaded={detail}>
        {({ app: a, pods }) => (
          <>
            <section aria-labelledby="status" class="card">
              <h2 id="status">Status</h2>
              <p data-testid="app-status">
                {appState(a)} at revision <strong>{a.revision}</strong>
                {a.running_revision !== a.revision && <> (running: {a.running_revision ?? "none"})</>}
              </p>
              {(!a.ready || a.message) && (a.reason || a.message) && (
                <p data-testid="app-reason">
                  {a.reason && <strong>{a.reason}: </strong>}
                  {a.message}
                </p>
              )}
              <dl class="facts">
                <dt>Image</dt>
                <dd><code>{a.image ?? "—"}</code></dd>
                {a.git_repo && (<><dt>Repository</dt><dd><code>{a.git_repo}</code> {a.git_ref ?? "default branch"}</dd></>)}
                <dt>URL</dt>
                <dd>{a.url ? <a href={a.url}>{a.url}</a> : "—"}</dd>
                <dt>Automatic rollback</dt>
                <dd>{a.auto_rollback ? "on" : "off"}</dd>
              </dl>
              <p class="buttons">
                {may(me, "app-operate", project) && <ActionButton label="Restart" action={() => ok(api.POST(`${APP}/restart`, { params: { path } }))} done={reload} />}
                {may(me, "app-operate", project) &&
                  a.processes
                    .filter((p) => p.schedule)
                    .map((p) => (
                      <ActionButton
                        label={`Run ${p.name} now`}
                        action={async () => setStarted(await ok(api.POST(`${APP}/run`, { params: { path }, body: { process: p.name } })))}
                        done={reload}
                      />
                    ))}
              </p>
              {started && (
                <p role="status" data-testid="run-started">
                  Started the job <code>{started.job}</code>: the controller makes it within moments, and its pod shows under Processes and pods.
                </p>
              )}
            </section>
            {may(me, "app-deploy", project) && <Deploy {...props} app_record={a} done={reload} />}
            <section aria-labelledby="processes">
              <h2 id="processes">Processes and pods</h2>
              <table>
                <caption class="sr-only">Processes</caption>
                <thead>
                  <tr><th scope="col">Process</th><th scope="col">Command</th><th scope="col">Size</th><th scope="col">Replicas</th><th scope="col">Pods ready</th></tr>
                </thead>
                <tbody>
                  {a.processes.map((p) => {
                    const mine = pods.filter((pod) => pod.process === p.name);
                    return (
                      <tr>
                        <td>{p.name}{p.schedule && <span class="muted"> ({p.schedule})</span>}</td>
                        <td><code>{p.command.join(" ") || "image default"}</code></td>
                        <td>{p.size}</td>
                        <td>{p.min_replicas === p.max_replicas ? p.min_replicas : `${p.min_replicas}–${p.max_replicas}`}</td>
                        <td>{mine.filter((pod) => pod.ready).length}/{mine.length}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
              {pods.length > 0 && (
                <table>
                  <caption class="sr-only">Pods</caption>
                  <thead>
                    <tr><th scope="col">Pod</th><th scope="col">Phase</th><th scope="col">Ready</th><th scope="col">Restarts</th><th scope="col">Started</th></tr>
                  </thead>
                  <tbody>
                    {pods.map((pod) => (
                      <tr>
                        <td><code>{pod.name}</code></td>
                        <td>{pod.phase}{pod.reason && <span class="muted"> {pod.reason}</span>}</td>
                        <td>{pod.ready ? "yes" : "no"}</td>
                        <td>{pod.restarts}</td>
                        <td>{when(pod.started_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </section>
            <Env {...props} app_record={a} done={reload} />
            {(a.domains.length > 0 || may(me, "app-write", project)) && <Domains {...props} app_record={a} done={reload} />}
          </>
        )}
      </Show>
      <section aria-labelledby="releases">
        <h2 id="releases">Releases</h2>
        <Show loaded={releases}>
          {(list) => (
            <>
            <Rollout releases={list} />
            <table>
              <caption class="sr-only">Releases</caption>
              <thead>
                <tr><th scope="col">Revision</th><th scope="col">Status</th><th scope="col">Why</th><th scope="col">Image</th><th scope="col">By</th><th scope="col">When</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
              </thead>
              <tbody>
                {[...list].sort((x, y) => y.revision - x.revision).map((r) => (
                  <tr data-testid={`release-${r.revision}`}>
                    <td>{r.revision}{r.current && " (current)"}{r.running && " (running)"}</td>
                    <td><Badge tone={releaseTone(r.status)}>{r.status.replace("_", " ")}</Badge></td>
                    <td>{r.reason}{r.note && <span class="muted"> {r.note}</span>}</td>
                    <td><code>{r.image ?? "—"}</code></td>
                    <td>{r.actor ?? "—"}</td>
                    <td>{when(r.created_at)}</td>
                    <td>
                      {!r.current && may(me, "app-deploy", project) && (
                        <ActionButton
                          label={`Roll back to ${r.revision}`}
                          confirm={`Roll back to revision ${r.revision}?`}
                          action={() => ok(api.POST(`${APP}/rollback`, { params: { path }, body: { revision: r.revision } }))}
                          done={reload}
                        />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            </>
          )}
        </Show>
        {may(me, "app-deploy", project) && (
          <ActionForm
            label="Promote"
            submit="Promote"
            action={(data) => ok(api.POST(`${APP}/promote`, { params: { path }, body: { environment: text(data, "target") } }))}
            done={(promoted) => setPromoted(promoted as Schemas["AppRecord"])}
          >
            <Field label="Promote this app's image and settings to environment" name="target" required placeholder="production" />
          </ActionForm>
        )}
      </section>
      {promoted && (
        <p role="status" class="rollout rollout-ok">
          Promoted to{" "}
          <Link href={`/projects/${seg(promoted.project)}/environments/${seg(promoted.environment)}/apps/${seg(promoted.name)}`}>
            {promoted.environment}
          </Link>
          : revision {promoted.revision} there.
        </p>
      )}
      <Builds {...props} />
      <Logs {...props} />
    </>
  );
}

/** The latest rollout in words: rolling out, available, failed, or rolled back and why. */
function Rollout({ releases }: { releases: Schemas["ReleaseRecord"][] }) {
  const sorted = [...releases].sort((x, y) => y.revision - x.revision);
  const latest = sorted[0];
  if (!latest) return null;
  const running = sorted.find((r) => r.running);
  const recentBad = sorted.slice(0, 2).find((r) => r.status === "failed" || r.status === "rolled_back");
  let words: string;
  let tone: "ok" | "wait" | "bad";
  if (latest.status === "pending") {
    words = `Revision ${latest.revision} is rolling out…`;
    tone = "wait";
  } else if (recentBad) {
    const what = `Revision ${recentBad.revision}${recentBad.image ? ` (${recentBad.image})` : ""}`;
    words =
      recentBad.status === "rolled_back"
        ? `${what} did not become available and was rolled back automatically.`
        : `${what} failed.`;
    if (recentBad.note) words += ` ${recentBad.note}`;
    if (running) words += ` Running revision ${running.revision}.`;
    tone = "bad";
  } else {
    words = `Revision ${latest.revision} is ${latest.status === "released" ? "available" : latest.status.replace("_", " ")}.`;
    tone = latest.status === "released" ? "ok" : "wait";
  }
  return (
    <p class={`rollout rollout-${tone}`} data-testid="rollout" role="status">
      {words}
    </p>
  );
}

function Deploy(props: AppProps & { app_record: Schemas["AppRecord"]; done: () => void }) {
  const a = props.app_record;
  const path = { project: props.project, environment: props.environment, app: props.app };
  return (
    <section aria-labelledby="deploy" class="card">
      <h2 id="deploy">Deploy</h2>
      {a.git_repo ? (
        <ActionForm
          label="Build and deploy"
          submit="Build and deploy"
          action={(data) => ok(api.POST(`${APP}/builds`, { params: { path }, body: { ref: text(data, "ref") || undefined } }))}
          done={props.done}
        >
          <Field label="Git ref (branch, tag or commit; empty: the app's)" name="ref" />
        </ActionForm>
      ) : (
        <ActionForm
          label="Deploy an image"
          submit="Deploy"
          action={(data) => ok(api.PATCH(APP, { params: { path }, body: { image: text(data, "image") } }))}
          done={props.done}
        >
          <Field label="Image" name="image" required placeholder={a.image ?? "nginx:1.27"} />
        </ActionForm>
      )}
    </section>
  );
}

function Env(props: AppProps & { app_record: Schemas["AppRecord"]; done: () => void }) {
  const me = useMe();
  const a = props.app_record;
  const path = { project: props.project, environment: props.environment, app: props.app };
  return (
    <section aria-labelledby="env">
      <h2 id="env">Environment variables</h2>
      {a.env.length === 0 ? (
        <p>None.</p>
      ) : (
        <table>
          <caption class="sr-only">Environment variables</caption>
          <thead>
            <tr><th scope="col">Name</th><th scope="col">Value</th></tr>
          </thead>
          <tbody>
            {a.env.map((v) => (
              <tr>
                <td><code>{v.name}</code></td>
                <td data-testid={`env-${v.name}`}>
                  {v.secret ? (
                    <>from secret <code>{v.secret.name}</code>, key <code>{v.secret.key}</code></>
                  ) : v.value === null || v.value === undefined ? (
                    <span class="muted">hidden (your role does not read secrets)</span>
                  ) : (
                    <code>{v.value}</code>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {may(me, "app-write", props.project) && (
        <ActionForm
          label="Set a variable"
          submit="Set variable"
          action={(data) => {
            const name = text(data, "name");
            const value = String(data.get("value") ?? "");
            const secret = text(data, "secret");
            const keep = a.env.filter((v) => v.name !== name).map((v) => ({ name: v.name, value: v.value ?? undefined, secret: v.secret ?? undefined }));
            if (keep.some((v) => v.value === undefined && !v.secret)) throw new Error("Your role cannot read every value, so the variables cannot be rewritten here.");
            const added = secret
              ? { name, secret: { name: secret.split("/")[0], key: secret.split("/")[1] ?? "" } }
              : { name, value };
            return ok(api.PATCH(APP, { params: { path }, body: { env: [...keep, added] } }));
          }}
          done={props.done}
        >
          <Field label="Name" name="name" required placeholder="DATABASE_URL" />
          <Field label="Value" name="value" />
          <Field label="Or from a secret (secret/key)" name="secret" placeholder="database/url" />
        </ActionForm>
      )}
    </section>
  );
}

function Domains(props: AppProps & { app_record: Schemas["AppRecord"]; done: () => void }) {
  const me = useMe();
  const a = props.app_record;
  const path = { project: props.project, environment: props.environment, app: props.app };
  // Checked again whenever the app's domains change (the app is polled).
  const checks = useLoad(() => ok(api.GET(`${APP}/domains`, { params: { path } })), [props.project, props.environment, props.app, a.domains.join(",")]);
  // Lists are replaced whole (updateApp): the app's domains with one added or left out.
  const setDomains = (domains: string[]) => ok(api.PATCH(APP, { params: { path }, body: { domains } }));
  const writer = may(me, "app-write", props.project);
  return (
    <section aria-labelledby="domains">
      <h2 id="domains">Domains</h2>
      {a.domains.length === 0 ? (
        <p>None: the app answers at its URL above.</p>
      ) : (
        <Show loaded={checks}>
          {(list) => (
            <table>
              <caption class="sr-only">Domains</caption>
              <thead>
                <tr><th scope="col">Hostname</th><th scope="col">DNS</th><th scope="col">Verified</th><th scope="col">Certificate</th>{writer && <th scope="col"><span class="sr-only">Actions</span></th>}</tr>
              </thead>
              <tbody>
                {list.map((d) => (
                  <tr data-testid={`domain-${d.hostname}`}>
                    <td>{d.hostname}</td>
                    <td>{d.ok ? <Badge tone="ok">points here</Badge> : <Badge tone="bad">not yet</Badge>} <span class="muted">{d.message}</span></td>
                    <td>
                      <Badge tone={d.verification.state === "verified" ? "ok" : d.verification.state === "taken" ? "bad" : "wait"}>{d.verification.state}</Badge>{" "}
                      <span class="muted">{d.verification.message}</span>
                      {d.verification.state !== "verified" && (
                        <div>
                          <code>{d.verification.record_name}</code> {d.verification.record_type} <code>{d.verification.record_value}</code>
                        </div>
                      )}
                    </td>
                    <td>
                      <Badge tone={d.certificate.state === "issued" || d.certificate.state === "none" ? "ok" : d.certificate.state === "pending" || d.certificate.state === "expiring" ? "wait" : "bad"}>
                        {d.certificate.state}
                      </Badge>{" "}
                      <span class="muted">{d.certificate.message}{d.certificate.not_after ? ` (until ${when(d.certificate.not_after)})` : ""}</span>
                    </td>
                    {writer && (
                      <td>
                        <ActionButton
                          label={`Remove ${d.hostname}`}
                          class="danger"
                          confirm={`Stop serving ${d.hostname} from this app?`}
                          action={() => setDomains(a.domains.filter((h) => h !== d.hostname))}
                          done={props.done}
                        />
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Show>
      )}
      {a.domains.length > 0 && (
        <p>
          <button type="button" class="secondary" onClick={checks.reload}>
            Check the domains again
          </button>
        </p>
      )}
      {writer && (
        <ActionForm label="Add a domain" submit="Add domain" action={(data) => setDomains([...a.domains, text(data, "hostname")])} done={props.done}>
          <Field label="Hostname" name="hostname" required placeholder="www.example.com" />
        </ActionForm>
      )}
    </section>
  );
}

function Builds(props: AppProps) {
  const builds = useLoad(() => ok(api.GET(`${APP}/builds`, { params: { path: props } })), [props.project, props.environment, props.app], POLL_MS * 2);
  const [open, setOpen] = useState<number>();
  const list = builds.data?.builds ?? [];
  if (list.length === 0) return null;
  return (
    <section aria-labelledby="builds">
      <h2 id="builds">Builds</h2>
      <table>
        <caption class="sr-only">Builds</caption>
        <thead>
          <tr><th scope="col">Build</th><th scope="col">Status</th><th scope="col">Ref</th><th scope="col">Revision</th><th scope="col"><span class="sr-only">Logs</span></th></tr>
        </thead>
        <tbody>
          {list.map((b) => (
            <tr>
              <td>{b.id}</td>
              <td>{b.status}{b.message && <span class="muted"> {b.message}</span>}</td>
              <td>{b.ref ?? "default"}{b.commit && <code> {b.commit.slice(0, 12)}</code>}</td>
              <td>{b.revision ?? "—"}</td>
              <td><button type="button" class="secondary" onClick={() => setOpen(open === b.id ? undefined : b.id)}>{open === b.id ? "Hide" : "Show"} logs of build {b.id}</button></td>
            </tr>
          ))}
        </tbody>
      </table>
      {open !== undefined && <BuildLogs {...props} build={open} />}
    </section>
  );
}

function BuildLogs(props: AppProps & { build: number }) {
  const logs = useLoad(
    () => ok(api.GET(`${APP}/builds/{build}/logs`, { params: { path: { ...props, build: props.build } } })),
    [props.build],
    POLL_MS,
  );
  return (
    <Show loaded={logs}>
      {(entries) => (
        <pre class="log" tabIndex={0} aria-label={`Logs of build ${props.build}`}>
          {(entries as Schemas["LogEntry"][]).map((e) => `— ${e.container ?? e.pod}\n${e.lines.join("\n")}`).join("\n")}
        </pre>
      )}
    </Show>
  );
}

type Line = { at: string; pod: string; text: string };

/** Follows the app's logs as the CLI's `berth logs --follow` does: asks again every 2 s with `since`, the second of the newest line, and drops lines already shown. */
function Logs(props: AppProps) {
  const [following, setFollowing] = useState(false);
  const [lines, setLines] = useState<Line[]>([]);
  const [problem, setProblem] = useState<ApiProblem>();
  const seen = useRef(new Set<string>());
  const newest = useRef("");
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (!following) return;
    let stopped = false;
    let timer: number | undefined;
    const poll = async () => {
      try {
        const since = newest.current ? Math.floor(Date.parse(newest.current) / 1000) : undefined;
        const entries = await ok(api.GET(`${APP}/logs`, { params: { path: props, query: { tail: TAIL, since } } }));
        const fresh: Line[] = [];
        for (const entry of entries) {
          entry.lines.forEach((text, i) => {
            const at = entry.timestamps[i] ?? "";
            const key = `${entry.pod}\u0000${at}\u0000${text}`;
            if (seen.current.has(key)) return;
            seen.current.add(key);
            fresh.push({ at, pod: entry.pod, text });
            if (at > newest.current) newest.current = at;
          });
        }
        fresh.sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
        if (!stopped && fresh.length) setLines((old) => [...old, ...fresh].slice(-KEEP));
        setProblem(undefined);
      } catch (error) {
        setProblem(toProblem(error));
      }
      if (!stopped) timer = setTimeout(poll, POLL_MS) as unknown as number;
    };
    poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [following, props.project, props.environment, props.app]);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [lines]);
  return (
    <section aria-labelledby="logs">
      <h2 id="logs">Logs</h2>
      <p>
        <button type="button" onClick={() => setFollowing(!following)} aria-pressed={following}>
          {following ? "Stop following" : "Follow logs"}
        </button>
      </p>
      <ProblemNote problem={problem} />
      {(following || lines.length > 0) && (
        <pre class="log" ref={box} tabIndex={0} aria-label="App logs" aria-live="off" data-testid="logs">
          {lines.length === 0 ? "Waiting for lines…" : lines.map((l) => `${l.at.slice(0, 19).replace("T", " ")} ${l.pod}  ${l.text}`).join("\n")}
        </pre>
      )}
    </section>
  );
}
