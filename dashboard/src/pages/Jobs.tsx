// Jobs: the tenant's jobs, newest first, filtered by name, state, pool and kind, a page
// at a time (the API's cursor; the cursors of earlier pages are kept in the
// hash so Back and Previous work).

import { useEffect, useState } from "preact/hooks";
import type { Job, Page } from "@duetime/sdk/contract";
import { api } from "../api";
import { ErrorBox, Section, StateBadge, Time, useLoad } from "../components";
import { href, navigate } from "../router";

const STATES = ["SCHEDULED", "PAUSED", "CANCELLED", "COMPLETED", "DEAD"];
const LIMIT = 50;

export function describeTarget(job: Job): string {
  const t = job.target;
  switch (t.type) {
    case "queue":
      return `queue ${t.pool}`;
    case "http":
      return `${t.method ?? "POST"} ${t.url}`;
    case "nats":
      return `nats ${t.subject}${t.broker && t.broker !== "nats" ? ` via ${t.broker}` : ""}`;
    case "amqp":
      return `amqp ${t.exchange || "(default exchange)"} → ${t.routingKey}${t.broker && t.broker !== "amqp" ? ` via ${t.broker}` : ""}`;
  }
}

/** A cron job's schedule, its defaults filled in (tz, misfire, overlap, jitter); undefined for a one-off (a runAt). */
export function cronSchedule(job: Job): Extract<Job["schedule"], { cron: string }> | undefined {
  return "cron" in job.schedule ? job.schedule : undefined;
}

export function describeSchedule(job: Job): string {
  const s = cronSchedule(job);
  if (s) return `cron ${s.cron}${s.tz !== "UTC" ? ` (${s.tz})` : ""}`;
  return "once";
}

export function JobsPage({ query }: { query: URLSearchParams }) {
  const name = query.get("name") ?? "";
  const state = query.get("state") ?? "";
  const pool = query.get("pool") ?? "";
  const kind = query.get("kind") ?? "";
  const cursor = query.get("cursor") ?? "";
  // Earlier pages' cursors, comma-separated ("~" for the first page).
  const back = query.get("back");
  const [typed, setTyped] = useState(name);
  const [typedPool, setTypedPool] = useState(pool);
  // The boxes follow the address (the Jobs tab, Back) as well as the typing.
  useEffect(() => setTyped(name), [name]);
  useEffect(() => setTypedPool(pool), [pool]);
  const jobs = useLoad(
    (signal) => api<Page<Job>>("GET", "/v1/jobs", { query: { name, state, pool, kind, cursor, limit: LIMIT }, signal }),
    [name, state, pool, kind, cursor],
    5000,
  );
  const go = (next: Record<string, string | undefined>) => navigate(href(["jobs"], { name, state, pool, kind, ...next }));
  const previous = back === null ? undefined : back.split(",");
  return (
    <Section
      title="Jobs"
      actions={
        <button type="button" onClick={jobs.reload}>
          Refresh
        </button>
      }
    >
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          go({ name: typed.trim(), pool: typedPool.trim(), cursor: undefined, back: undefined });
        }}
      >
        <label>
          Name
          <input
            type="search"
            name="name"
            placeholder="exact job name"
            value={typed}
            onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          State
          <select
            name="state"
            value={state}
            onChange={(e) => go({ state: (e.target as HTMLSelectElement).value, cursor: undefined, back: undefined })}
          >
            <option value="">any</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Pool
          <input
            type="search"
            name="pool"
            placeholder="worker pool"
            value={typedPool}
            onInput={(e) => setTypedPool((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Kind
          <select name="kind" value={kind} onChange={(e) => go({ kind: (e.target as HTMLSelectElement).value, cursor: undefined, back: undefined })}>
            <option value="">any</option>
            <option value="once">one-off</option>
            <option value="cron">cron</option>
          </select>
        </label>
        <button type="submit">Search</button>
      </form>
      <ErrorBox error={jobs.error} />
      {jobs.data === undefined ? (
        jobs.error ? null : (
          <p class="muted">Loading…</p>
        )
      ) : jobs.data.items.length === 0 ? (
        <p class="muted empty">No jobs{name || state || pool || kind ? " match these filters" : ""}.</p>
      ) : (
        <table class="list" data-testid="jobs-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>State</th>
              <th>Target</th>
              <th>Schedule</th>
              <th>Next run</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {jobs.data.items.map((job) => (
              <tr key={job.jobId}>
                <td>
                  <a href={href(["jobs", job.jobId])}>{job.name}</a>
                  <div class="muted small mono">{job.jobId}</div>
                </td>
                <td>
                  <StateBadge state={job.state} />
                </td>
                <td class="mono small">{describeTarget(job)}</td>
                <td class="small">{describeSchedule(job)}</td>
                <td>
                  <Time iso={job.nextRunAt} rel />
                </td>
                <td>
                  <Time iso={job.createdAt} />
                </td>
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
            go({ cursor: prev === "~" ? undefined : prev, back: stack.length > 1 ? stack.slice(0, -1).join(",") : undefined });
          }}
        >
          ← Previous
        </button>
        <button
          type="button"
          disabled={!jobs.data?.nextCursor}
          onClick={() => go({ cursor: jobs.data?.nextCursor ?? undefined, back: [...(previous ?? []), cursor || "~"].join(",") })}
        >
          Next →
        </button>
      </div>
    </Section>
  );
}
