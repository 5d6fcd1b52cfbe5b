import { useEffect, useState } from "preact/hooks";
import type { Schemas } from "../api/client";
import type { paths } from "../api/schema";
import { Field, ProblemNote, toProblem, when } from "../ui";
import type { ApiProblem } from "../api/client";
import { navigate } from "../router";

/** The filters of listAuditEvents and listProjectAuditEvents, kept in the page's address. */
type AuditQuery = NonNullable<paths["/api/v1/audit"]["get"]["parameters"]["query"]>;
export type AuditFilters = Pick<AuditQuery, "actor" | "action" | "target">;
const FILTERS = ["actor", "action", "target"] as const;

function filtersOf(search: string): AuditFilters {
  const query = new URLSearchParams(search);
  const filters: Record<string, string> = {};
  for (const name of FILTERS) {
    const value = query.get(name);
    if (value) filters[name] = value;
  }
  // As typed in the address: the API judges them (an action it does not
  // know is its 400, shown in its words).
  return filters as AuditFilters;
}

/**
 * An audit log, newest first, paged and filtered by who, what and on what
 * (the filters are the page's address: shareable, kept by a reload). A
 * filtered page may hold fewer events than asked, even none, and still go
 * on (`next_before`): the API reads a bounded number of events per page.
 */
export function AuditLog({ load }: { load: (before: number | undefined, filters: AuditFilters) => Promise<Schemas["AuditPage"]> }) {
  const filters = filtersOf(location.search);
  return <FilteredLog key={location.search} load={load} filters={filters} />;
}

function FilteredLog({ load, filters }: { load: (before: number | undefined, filters: AuditFilters) => Promise<Schemas["AuditPage"]>; filters: AuditFilters }) {
  const [pages, setPages] = useState<(number | undefined)[]>([undefined]);
  const [page, setPage] = useState<Schemas["AuditPage"]>();
  const [problem, setProblem] = useState<ApiProblem>();
  const before = pages[pages.length - 1];
  useEffect(() => {
    setPage(undefined);
    load(before, filters).then(setPage, (e) => setProblem(toProblem(e)));
  }, [before]);
  const apply = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const query = new URLSearchParams(location.search);
    for (const name of FILTERS) {
      const value = String(form.get(name) ?? "").trim();
      if (value) query.set(name, value);
      else query.delete(name);
    }
    const search = query.toString();
    navigate(location.pathname + (search ? `?${search}` : ""));
  };
  return (
    <>
      <form class="filters" aria-label="Filter the audit log" onSubmit={apply}>
        <Field label="Who (email)" name="actor" value={filters.actor ?? ""} />
        <Field label="Action (operation id)" name="action" value={filters.action ?? ""} placeholder="updateApp" />
        <Field label="Target (ends in * for a prefix)" name="target" value={filters.target ?? ""} placeholder="web*" />
        <button type="submit" class="secondary">Filter</button>
      </form>
      <ProblemNote problem={problem} />
      {!page && !problem && <p class="muted">Loading…</p>}
      {page && (
        <>
          <table>
            <caption class="sr-only">Audit events</caption>
            <thead>
              <tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th></tr>
            </thead>
            <tbody>
              {page.events.map((e) => (
                <tr>
                  <td>{when(e.at)}</td>
                  <td>{e.actor ?? e.actor_kind}</td>
                  <td>{e.action}</td>
                  <td>{e.target ? `${e.target_kind ?? ""} ${e.target}` : e.project ?? "—"}</td>
                  <td>{e.outcome}{e.status ? ` (${e.status})` : ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.events.length === 0 && <p>{page.next_before == null ? "No events." : "No events in this stretch of the log: Older goes on looking."}</p>}
          <p class="pager">
            <button type="button" class="secondary" disabled={pages.length === 1} onClick={() => setPages(pages.slice(0, -1))}>
              Newer
            </button>{" "}
            <button
              type="button"
              class="secondary"
              disabled={page.next_before === null || page.next_before === undefined}
              onClick={() => setPages([...pages, page.next_before ?? undefined])}
            >
              Older
            </button>
          </p>
        </>
      )}
    </>
  );
}
