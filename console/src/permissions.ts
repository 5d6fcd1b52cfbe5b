// What the caller may do, as the API tells it (`getCurrentUser`'s
// `access`, docs/api-notes.md "The caller's permissions"): never a second
// copy of the role table here. The types are the API's own (schema.d.ts).
import type { Identity, Schemas } from "./api/client";

export type Permission = Schemas["Permission"];

/** Whether the caller may PERMISSION on the organization, or in PROJECT (and ENVIRONMENT). */
export function may(me: Identity | undefined, permission: Permission, project?: string, environment?: string): boolean {
  // Not signed in yet (or still loading): nothing to hide; the API decides.
  if (!me) return true;
  const access = me.access;
  if (!project) return access.permissions.includes(permission);
  const mine = access.projects.find((p) => p.project === project);
  if (!mine) return access.project_permissions.includes(permission);
  if (environment && mine.environments) {
    return mine.environments.find((e) => e.environment === environment)?.permissions.includes(permission) ?? false;
  }
  return mine.permissions.includes(permission);
}

/** Whether the API told what the caller may do (always, since getCurrentUser answers `access`). */
export function accessKnown(me: Identity | undefined): boolean {
  return Boolean(me?.access);
}
