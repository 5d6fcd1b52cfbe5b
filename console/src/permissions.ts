// What the caller may do, as the API tells it (`getCurrentUser`'s
// `access`): never a second copy of the role table here. Permission names
// are the API's: read, app-operate, app-write, app-deploy, secret-write,
// env-write, secret-read, env-delete-protected, project-write,
// member-manage, audit-read, manage-owners.
//
// TODO(issue 47, API side, merged separately): `access` is being added to
// getCurrentUser's answer in openapi/ (branch capi). Until the generated
// types (api/schema.d.ts) have it, it is read here untyped; when it is
// absent `may` answers true, every action is shown, and a refused one shows
// the API's 403 in plain words. After the merge: regenerate the types
// (scripts/console.sh generate) and drop the casts below.
import type { Identity } from "./api/client";

type EnvironmentAccess = { environment: string; permissions: string[] };
type ProjectAccess = { project: string; role?: string | null; permissions: string[]; environments?: EnvironmentAccess[] | null };
type Access = {
  permissions: string[];
  project_permissions: string[];
  projects: ProjectAccess[];
};

export type Permission =
  | "read"
  | "app-operate"
  | "app-write"
  | "app-deploy"
  | "secret-write"
  | "env-write"
  | "secret-read"
  | "env-delete-protected"
  | "project-write"
  | "member-manage"
  | "audit-read"
  | "manage-owners";

/** Whether the caller may PERMISSION on the organization, or in PROJECT (and ENVIRONMENT). */
export function may(me: Identity | undefined, permission: Permission, project?: string, environment?: string): boolean {
  const access = (me as (Identity & { access?: Access }) | undefined)?.access;
  if (!access) return true;
  if (!project) return access.permissions.includes(permission);
  const mine = access.projects.find((p) => p.project === project);
  if (!mine) return access.project_permissions.includes(permission);
  if (environment && mine.environments) {
    return mine.environments.find((e) => e.environment === environment)?.permissions.includes(permission) ?? false;
  }
  return mine.permissions.includes(permission);
}

/** Whether the API told what the caller may do (the journeys check hidden actions only then). */
export function accessKnown(me: Identity | undefined): boolean {
  return Boolean((me as (Identity & { access?: Access }) | undefined)?.access);
}
