import { useEffect, useState } from "preact/hooks";
import type { Schemas } from "../api/client";
import { ProblemNote, toProblem, when } from "../ui";
import type { ApiProblem } from "../api/client";

// TODO(issue 47, API side, merged separately): filters by actor, action
// and target (query parameters of listAuditEvents and
// listProjectAuditEvents) once they are in openapi/; pages only for now.
export function AuditLog({ load }: { load: (before?: number) => Promise<Schemas["AuditPage"]> }) {
  const [pages, setPages] = useState<(number | undefined)[]>([undefined]);
  const [page, setPage] = useState<Schemas["AuditPage"]>();
  const [problem, setProblem] = useState<ApiProblem>();
  const before = pages[pages.length - 1];
  useEffect(() => {
    setPage(undefined);
    load(before).then(setPage, (e) => setProblem(toProblem(e)));
  }, [before]);
  return (
    <>
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
          {page.events.length === 0 && <p>No events.</p>}
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
