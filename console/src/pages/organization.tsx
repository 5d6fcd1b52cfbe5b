import { useState } from "preact/hooks";
import { api, ok, type Schemas } from "../api/client";
import { may } from "../permissions";
import { Link, navigate, seg } from "../router";
import { useMe } from "../session";
import { ActionButton, ActionForm, Badge, Field, ListTable, Select, Show, useLoad, when, text } from "../ui";
import { AuditLog } from "./audit";
import { ShownOnce } from "./shown-once";

const ROLES = ["member", "viewer", "operator", "developer", "admin", "owner"];
export const PROJECT_ROLES = ["viewer", "operator", "developer", "admin"];

export function Overview() {
  const me = useMe();
  const projects = useLoad(() => ok(api.GET("/api/v1/projects")), []);
  return (
    <>
      <h1>Projects</h1>
      <ListTable
        loaded={projects}
        caption="Projects"
        empty="No projects yet."
        columns={["Project", "Environments", "State", "Created"]}
        row={(p) => (
          <tr>
            <td><Link href={`/projects/${seg(p.name)}`}>{p.display_name || p.name}</Link> <span class="muted">{p.name}</span></td>
            <td>{p.environments}</td>
            <td>{p.deleting ? <Badge tone="bad">deleting</Badge> : p.ready ? <Badge tone="ok">ready</Badge> : <Badge tone="wait">setting up</Badge>}</td>
            <td>{when(p.created_at)}</td>
          </tr>
        )}
      />
      <Health />
      {may(me, "project-write") && (
        <>
          <h2>New project</h2>
          <ActionForm
            label="New project"
            submit="Create project"
            action={(data) => ok(api.POST("/api/v1/projects", { body: { name: text(data, "name"), display_name: text(data, "display_name") || text(data, "name") } }))}
            done={projects.reload}
          >
            <Field label="Name" name="name" required placeholder="shop" />
            <Field label="Display name (optional)" name="display_name" />
          </ActionForm>
        </>
      )}
    </>
  );
}

export function Members() {
  const me = useMe();
  const members = useLoad(() => ok(api.GET("/api/v1/members")), []);
  const projects = useLoad(() => ok(api.GET("/api/v1/projects")), []);
  const [invited, setInvited] = useState<Schemas["NewMember"]>();
  // What this page wrote, as the API answered it: the list is read from an
  // index that may not show a write at once (DynamoDB's global indexes are
  // eventually consistent), so a written member is shown as written.
  const [written, setWritten] = useState<Record<string, Schemas["MemberRecord"]>>({});
  const shown = (list: Schemas["MemberRecord"][]) => {
    const byId = new Map(list.map((m) => [m.id, m]));
    for (const member of Object.values(written)) byId.set(member.id, member);
    return [...byId.values()].sort((a, b) => a.email.localeCompare(b.email));
  };
  return (
    <>
      <h1>Members</h1>
      <Show loaded={members}>
        {(loaded) => {
          const list = shown(loaded);
          return (
          <table>
            <caption class="sr-only">Members</caption>
            <thead>
              <tr><th scope="col">Member</th><th scope="col">Role</th><th scope="col">Project roles</th><th scope="col">State</th></tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <tr>
                  <td>{m.display_name ? `${m.display_name} ` : ""}<span>{m.email}</span></td>
                  <td>{m.role}</td>
                  <td>{m.projects.length ? m.projects.map((g) => `${g.project}: ${g.role}`).join(", ") : "—"}</td>
                  <td>{!m.active ? <Badge tone="bad">removed</Badge> : m.must_change_password ? <Badge tone="wait">invited</Badge> : <Badge tone="ok">active</Badge>}</td>
                </tr>
              ))}
            </tbody>
          </table>
          );
        }}
      </Show>
      {invited && (
        <ShownOnce label={`Temporary password for ${invited.email}`} secret={invited.temporary_password} done={() => setInvited(undefined)}>
          Give it to them over a channel you trust; they choose their own password when they first sign in.
        </ShownOnce>
      )}
      {may(me, "member-manage") && (
        <>
          <h2>Invite a member</h2>
          <ActionForm
            label="Invite a member"
            submit="Invite"
            action={async (data) => {
              const role = text(data, "role") as Schemas["Role"];
              const member = await ok(api.POST("/api/v1/members", { body: { email: text(data, "email"), role } }));
              const project = text(data, "project");
              if (project) {
                const granted = await ok(
                  api.PUT("/api/v1/projects/{project}/members/{member}", {
                    params: { path: { project, member: member.id } },
                    body: { role: text(data, "project_role") as Schemas["ProjectRole"] },
                  }),
                );
                return { ...member, projects: [{ project, role: granted.role }] };
              }
              return member;
            }}
            done={(member) => {
              const invitedMember = member as Schemas["NewMember"];
              setInvited(invitedMember);
              const { temporary_password: _, ...record } = invitedMember;
              setWritten((w) => ({ ...w, [record.id]: record }));
              members.reload();
            }}
          >
            <Field label="Email" name="email" type="email" required />
            <Select label="Role in the organization" name="role" options={ROLES} value="member" />
            <div class="field">
              <label for="invite-project">Also a role in project (optional)</label>
              <select id="invite-project" name="project">
                <option value="">none</option>
                {(projects.data ?? []).map((p) => (
                  <option value={p.name}>{p.name}</option>
                ))}
              </select>
            </div>
            <Select label="Project role" name="project_role" options={PROJECT_ROLES} value="developer" />
          </ActionForm>
        </>
      )}
    </>
  );
}

export function Tokens() {
  const tokens = useLoad(() => ok(api.GET("/api/v1/tokens")), []);
  const [created, setCreated] = useState<Schemas["CreatedToken"]>();
  return (
    <>
      <h1>API tokens</h1>
      <p>Tokens act as you, for the CLI and scripts.</p>
      <ListTable
        loaded={tokens}
        caption="API tokens"
        empty="No tokens."
        columns={["Name", "Ceiling", "Expires", "Last used"]}
        actions
        row={(t) => (
          <tr>
            <td>{t.name}</td>
            <td>{t.ceiling ?? "your rights"}</td>
            <td>{when(t.expires_at) === "—" ? "never" : when(t.expires_at)}</td>
            <td>{when(t.last_used_at)}</td>
            <td>
              <ActionButton
                label={`Delete ${t.name}`}
                class="danger"
                confirm={`Delete the token ${t.name}? What uses it stops working.`}
                action={() => ok(api.DELETE("/api/v1/tokens/{token}", { params: { path: { token: t.id } } }))}
                done={tokens.reload}
              />
            </td>
          </tr>
        )}
      />
      {created && (
        <ShownOnce label={`Token ${created.name}`} secret={created.token} done={() => setCreated(undefined)}>
          Copy it now: it is shown only this once.
        </ShownOnce>
      )}
      <h2>New token</h2>
      <ActionForm
        label="New token"
        submit="Create token"
        action={(data) => {
          const ceiling = text(data, "ceiling");
          const days = Number(text(data, "days"));
          return ok(
            api.POST("/api/v1/tokens", {
              body: {
                name: text(data, "name"),
                ceiling: ceiling === "none" ? undefined : (ceiling as Schemas["Ceiling"]),
                expires_in_days: days > 0 ? days : undefined,
              },
            }),
          );
        }}
        done={(token) => {
          setCreated(token as Schemas["CreatedToken"]);
          tokens.reload();
        }}
      >
        <Field label="Name" name="name" required />
        <Select label="Ceiling" name="ceiling" options={["none", "read", "deploy"]} />
        <Field label="Expires in days (empty: never)" name="days" type="number" />
      </ActionForm>
    </>
  );
}

export function OrgAudit() {
  const project = new URLSearchParams(location.search).get("project") ?? "";
  const projects = useLoad(() => ok(api.GET("/api/v1/projects")), []);
  return (
    <>
      <h1>Audit log</h1>
      <div class="field filter">
        <label for="audit-project">Project</label>
        <select
          id="audit-project"
          value={project}
          onChange={(event) => {
            const chosen = event.currentTarget.value;
            // The other filters stay.
            const query = new URLSearchParams(location.search);
            if (chosen) query.set("project", chosen);
            else query.delete("project");
            const search = query.toString();
            navigate(search ? `/audit?${search}` : "/audit");
          }}
        >
          <option value="">every project and the organization</option>
          {(projects.data ?? []).map((p) => (
            <option value={p.name}>{p.name}</option>
          ))}
        </select>
      </div>
      <AuditLog
        key={project}
        load={(before, filters) =>
          project
            ? ok(api.GET("/api/v1/projects/{project}/audit", { params: { path: { project }, query: { before, limit: 50, ...filters } } }))
            : ok(api.GET("/api/v1/audit", { params: { query: { before, limit: 50, ...filters } } }))
        }
      />
    </>
  );
}

/** Berth's health: each subsystem, up or down, with its latency (503 carries the same report). */
function Health() {
  const health = useLoad(async () => {
    const answer = await api.GET("/api/v1/healthz/details");
    const report = (answer.data ?? answer.error) as Schemas["HealthReport"] | undefined;
    if (report && Array.isArray(report.subsystems)) return report;
    return ok(Promise.resolve(answer));
  }, [], 10_000);
  return (
    <section aria-labelledby="health">
      <h2 id="health">Health</h2>
      <Show loaded={health}>
        {(report) => (
          <p>
            <Badge tone={report.status === "ok" ? "ok" : "bad"}>{report.status}</Badge>{" "}
            {report.subsystems.map((s, i) => (
              <span>
                {i > 0 && ", "}
                {s.name} {s.status === "up" ? "up" : <strong class="down">down{s.detail ? ` (${s.detail})` : ""}</strong>}{" "}
                <span class="muted">{s.latency_ms} ms</span>
              </span>
            ))}{" "}
            <span class="muted">— version {report.version}</span>
          </p>
        )}
      </Show>
    </section>
  );
}
