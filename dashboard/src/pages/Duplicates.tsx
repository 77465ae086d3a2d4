// Possible duplicates: the tenant's executions where an attempt may have run
// alongside another one (GET /v1/executions?possibleDuplicate=true), newest
// first, a page at a time (earlier pages' cursors kept in the hash, as on
// the Jobs page), each with its reason in one sentence.

import type { Page, PossibleDuplicateExecution } from "@duetime/sdk/contract";
import { api } from "../api";
import { ErrorBox, Section, StateBadge, Time, useLoad } from "../components";
import { href, navigate } from "../router";

/** Why the work may have been done twice, in one sentence. */
export function explain(d: PossibleDuplicateExecution): string {
  const n = d.possibleDuplicate.attempt;
  return d.possibleDuplicate.reason === "lease_lost"
    ? `Attempt ${n} lost its lease but its worker kept calling the server afterwards, so it ran on while another attempt could run too.`
    : `Attempt ${n}'s lease expired (its worker stopped heartbeating or ran past the timeout) and a later attempt succeeded, so if that worker was still running the work was done twice.`;
}

export function DuplicatesPage({ query }: { query: URLSearchParams }) {
  const cursor = query.get("cursor") ?? "";
  const back = query.get("back");
  const list = useLoad(
    (signal) => api<Page<PossibleDuplicateExecution>>("GET", "/v1/executions", { query: { possibleDuplicate: "true", cursor, limit: 50 }, signal }),
    [cursor],
    10_000,
  );
  const previous = back === null ? undefined : back.split(",");
  return (
    <Section
      title="Possible duplicates"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      <p class="muted">
        Executions where an attempt may have run while another attempt of the same execution did: check that their work is idempotent, or undo the
        second effect.
      </p>
      <ErrorBox error={list.error} />
      {list.data === undefined ? null : list.data.items.length === 0 ? (
        <p class="muted empty">No possible duplicate.</p>
      ) : (
        <table class="list" data-testid="duplicates-table">
          <thead>
            <tr>
              <th>Job</th>
              <th>Scheduled for</th>
              <th>State</th>
              <th>Seen</th>
              <th>Why</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((d) => (
              <tr key={`${d.executionId}/${d.possibleDuplicate.attempt}`}>
                <td>
                  <a href={href(["jobs", d.jobId])}>{d.name}</a>
                  <div class="muted small mono">
                    {d.executionId} · pool {d.pool}
                  </div>
                </td>
                <td>
                  <Time iso={d.scheduledFor} />
                </td>
                <td>
                  <StateBadge state={d.state} />
                  <div class="muted small">latest attempt {d.attempt}</div>
                </td>
                <td>
                  <Time iso={d.possibleDuplicate.at} rel />
                </td>
                <td class="small">{explain(d)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="pager">
        <button
          type="button"
          disabled={previous === undefined}
          onClick={() => {
            const stack = previous ?? [];
            const prev = stack[stack.length - 1] ?? "~";
            navigate(
              href(["duplicates"], { cursor: prev === "~" ? undefined : prev, back: stack.length > 1 ? stack.slice(0, -1).join(",") : undefined }),
            );
          }}
        >
          ← Previous
        </button>
        <button
          type="button"
          disabled={!list.data?.nextCursor}
          onClick={() =>
            navigate(href(["duplicates"], { cursor: list.data?.nextCursor ?? undefined, back: [...(previous ?? []), cursor || "~"].join(",") }))
          }
        >
          Next →
        </button>
      </div>
    </Section>
  );
}
