import { useState } from "preact/hooks";
import { api, ok, type Schemas } from "../api/client";
import { may } from "../permissions";
import { Link, seg } from "../router";
import { useMe } from "../session";
import { ActionButton, ActionForm, Badge, Field, ListTable, Select, Show, useLoad, when, text } from "../ui";
import { AuditLog } from "./audit";
import { PROJECT_ROLES } from "./organization";
import { ShownOnce } from "./shown-once";

export function Crumbs(props: { project: string; environment?: string; app?: string }) {
  const base = `/projects/${seg(props.project)}`;
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <Link href="/">Projects</Link> / <Link href={base}>{props.project}</Link>
      {props.environment && (
        <>
          {" / "}
          <Link href={`${base}/environments/${seg(props.environment)}`}>{props.environment}</Link>
        </>
      )}
      {props.app && props.environment && (
        <>
          {" / "}
          <Link href={`${base}/environments/${seg(props.environment)}/apps/${seg(props.app)}`}>{props.app}</Link>
        </>
      )}
    </nav>
  );
}

function ProjectNav({ project }: { project: string }) {
  const base = `/projects/${seg(project)}`;
  return (
    <nav aria-label="Project" class="tabs">
      <Link href={base}>Environments</Link>
      <Link href={`${base}/members`}>Members</Link>
      <Link href={`${base}/tokens`}>Deploy tokens</Link>
      <Link href={`${base}/audit`}>Audit log</Link>
    </nav>
  );
}

export function envState(e: Schemas["EnvironmentRecord"]) {
  if (e.deleting) return <Badge tone="bad">{e.deletion_scheduled_at ? `deleted, purged at ${when(e.deletion_scheduled_at)}` : "deleting"}</Badge>;
  if (e.ready) return <Badge tone="ok">ready</Badge>;
  return <Badge tone="wait">{e.phase ?? "setting up"}</Badge>;
}

export function ProjectPage({ project }: { project: string }) {
  const me = useMe();
  const info = useLoad(() => ok(api.GET("/api/v1/projects/{project}", { params: { path: { project } } })), [project]);
  const envs = useLoad(
    () => ok(api.GET("/api/v1/projects/{project}/environments", { params: { path: { project } } })),
    [project],
    5000,
  );
  return (
    <>
      <Crumbs project={project} />
      <h1>{info.data?.display_name || project}</h1>
      {info.data?.description && <p>{info.data.description}</p>}
      <ProjectNav project={project} />
      <h2>Environments</h2>
      <ListTable
        loaded={envs}
        caption="Environments"
        empty="No environments yet."
        columns={["Environment", "Type", "State", "Namespace"]}
        row={(e) => (
          <tr>
            <td><Link href={`/projects/${seg(project)}/environments/${seg(e.name)}`}>{e.name}</Link></td>
            <td>{e.env_type}</td>
            <td>{envState(e)}{e.message && <span class="muted"> {e.message}</span>}</td>
            <td><code>{e.namespace}</code></td>
          </tr>
        )}
      />
      {may(me, "env-write", project) && (
        <>
          <h2>New environment</h2>
          <ActionForm
            label="New environment"
            submit="Create environment"
            action={(data) => {
              // Only the parts given: the rest are the platform's defaults.
              const pods = text(data, "pods");
              const quota = { cpu: text(data, "cpu") || undefined, memory: text(data, "memory") || undefined, pods: pods ? Number(pods) : undefined };
              const asked = Object.values(quota).some((v) => v !== undefined);
              return ok(
                api.POST("/api/v1/projects/{project}/environments", {
                  params: { path: { project } },
                  body: { name: text(data, "name"), env_type: text(data, "env_type"), quota: asked ? quota : undefined },
                }),
              );
            }}
            done={envs.reload}
          >
            <Field label="Name" name="name" required placeholder="staging" />
            <Select label="Type" name="env_type" options={["standard", "production", "preview"]} />
            <Field label="Quota: CPU (optional)" name="cpu" placeholder="4" />
            <Field label="Quota: memory (optional)" name="memory" placeholder="8Gi" />
            <Field label="Quota: pods (optional)" name="pods" type="number" />
          </ActionForm>
        </>
      )}
    </>
  );
}

export function ProjectMembers({ project }: { project: string }) {
  const me = useMe();
  const members = useLoad(() => ok(api.GET("/api/v1/projects/{project}/members", { params: { path: { project } } })), [project]);
  return (
    <>
      <Crumbs project={project} />
      <h1>{project}: members</h1>
      <ProjectNav project={project} />
      <Show loaded={members}>
        {(list) => (
          <table>
            <caption class="sr-only">Project members</caption>
            <thead>
              <tr><th scope="col">Member</th><th scope="col">Project role</th><th scope="col">Organization role</th><th scope="col"><span class="sr-only">Actions</span></th></tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <tr>
                  <td>{m.email}</td>
                  <td>{m.role}</td>
                  <td>{m.organization_role}</td>
                  <td>
                    {may(me, "member-manage") && (
                      <ActionButton
                        label={`Remove ${m.email} from ${project}`}
                        class="danger"
                        action={() => ok(api.DELETE("/api/v1/projects/{project}/members/{member}", { params: { path: { project, member: m.id } } }))}
                        done={members.reload}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Show>
      {may(me, "member-manage") && (
        <>
          <h2>Give a member a role here</h2>
          <ActionForm
            label="Give a member a role"
            submit="Save role"
            action={(data) =>
              ok(
                api.PUT("/api/v1/projects/{project}/members/{member}", {
                  params: { path: { project, member: text(data, "member") } },
                  body: { role: text(data, "role") as Schemas["ProjectRole"] },
                }),
              )
            }
            done={members.reload}
          >
            <Field label="Member (id or email)" name="member" required />
            <Select label="Role" name="role" options={PROJECT_ROLES} value="developer" />
          </ActionForm>
        </>
      )}
    </>
  );
}

export function ProjectTokens({ project }: { project: string }) {
  const me = useMe();
  const tokens = useLoad(() => ok(api.GET("/api/v1/projects/{project}/tokens", { params: { path: { project } } })), [project]);
  const [created, setCreated] = useState<Schemas["CreatedDeployToken"]>();
  return (
    <>
      <Crumbs project={project} />
      <h1>{project}: deploy tokens</h1>
      <ProjectNav project={project} />
      <p>Deploy tokens belong to the project, not to whoever made them: for CI.</p>
      <ListTable
        loaded={tokens}
        caption="Deploy tokens"
        empty="No deploy tokens."
        columns={["Name", "Ceiling", "Environments", "Expires"]}
        actions
        row={(t) => (
          <tr>
            <td>{t.name}</td>
            <td>{t.ceiling ?? "admin"}</td>
            <td>{t.environments?.join(", ") || "all"}</td>
            <td>{t.expires_at ? when(t.expires_at) : "never"}</td>
            <td>
              {may(me, "project-write", project) && (
                <ActionButton
                  label={`Delete ${t.name}`}
                  class="danger"
                  confirm={`Delete the deploy token ${t.name}?`}
                  action={() => ok(api.DELETE("/api/v1/projects/{project}/tokens/{token}", { params: { path: { project, token: t.id } } }))}
                  done={tokens.reload}
                />
              )}
            </td>
          </tr>
        )}
      />
      {created && (
        <ShownOnce label={`Deploy token ${created.name}`} secret={created.token} done={() => setCreated(undefined)}>
          Copy it now: it is shown only this once. Its calls are made as {created.actor}.
        </ShownOnce>
      )}
      {may(me, "project-write", project) && (
        <>
          <h2>New deploy token</h2>
          <ActionForm
            label="New deploy token"
            submit="Create deploy token"
            action={(data) => {
              const ceiling = text(data, "ceiling");
              const envs = text(data, "environments");
              return ok(
                api.POST("/api/v1/projects/{project}/tokens", {
                  params: { path: { project } },
                  body: {
                    name: text(data, "name"),
                    ceiling: ceiling === "admin" ? undefined : (ceiling as Schemas["Ceiling"]),
                    environments: envs ? envs.split(",").map((e) => e.trim()).filter(Boolean) : undefined,
                  },
                }),
              );
            }}
            done={(token) => {
              setCreated(token as Schemas["CreatedDeployToken"]);
              tokens.reload();
            }}
          >
            <Field label="Name" name="name" required placeholder="ci" />
            <Select label="Ceiling" name="ceiling" options={["deploy", "read", "admin"]} />
            <Field label="Only these environments (comma-separated; empty: all)" name="environments" />
          </ActionForm>
        </>
      )}
    </>
  );
}

export function ProjectAudit({ project }: { project: string }) {
  return (
    <>
      <Crumbs project={project} />
      <h1>{project}: audit log</h1>
      <ProjectNav project={project} />
      <AuditLog
        load={(before, filters) =>
          ok(api.GET("/api/v1/projects/{project}/audit", { params: { path: { project }, query: { before, limit: 50, ...filters } } }))
        }
      />
    </>
  );
}
