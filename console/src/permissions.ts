// What the caller may do, as the API tells it: never a second copy of the
// role table here.
//
// TODO(issue 47, API side, merged separately): `getCurrentUser` gains the
// caller's permissions per organization and project. Until the generated
// types (api/schema.d.ts) have them, `may` answers true for every action
// and a refused one shows the API's 403 in plain words. When they land,
// read them here (the only place): e.g. `me.permissions.organization`
// and `me.permissions.projects[project]`, lists of permission names such
// as `secret-write`, `app-deploy`, `member-manage`.
import type { Identity } from "./api/client";

type Permissions = { organization?: string[]; projects?: Record<string, string[]> };

export function may(me: Identity | undefined, permission: string, project?: string): boolean {
  const permissions = (me as (Identity & { permissions?: Permissions }) | undefined)?.permissions;
  if (!permissions) return true;
  const held = new Set(permissions.organization ?? []);
  if (project) for (const p of permissions.projects?.[project] ?? []) held.add(p);
  return held.has(permission);
}
