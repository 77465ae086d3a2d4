// A job: its fields, its actions (pause, resume, trigger, cancel), an edit of
// its schedule (a compare-and-set on the version the user saw), for a
// recurring job its next fire times (the server's preview: in the job's zone
// and UTC, with daylight-saving moves marked), its run ledger (what became of
// each fire time of a recent window) and every attempt.

import { useState } from "preact/hooks";
import type { ExecutionItem, Job, OccurrenceItem, Page, PreviewResponse } from "@duetime/sdk/contract";
import { ApiError, api } from "../api";
import { ErrorBox, Json, Section, StateBadge, Time, useLoad } from "../components";
import { href } from "../router";
import { utcTime, wallTime } from "../time";
import { cronSchedule, describeSchedule, describeTarget } from "./Jobs";

const ENDED = new Set(["CANCELLED", "COMPLETED", "DEAD"]);

function Actions({ job, onDone }: { job: Job; onDone: (message: string) => void }) {
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [confirming, setConfirming] = useState(false);
  const act = async (label: string, method: string, path: string) => {
    setBusy(label);
    setError(undefined);
    try {
      await api(method, path, method === "POST" ? { body: {} } : {});
      onDone(`${label}: done`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(undefined);
      setConfirming(false);
    }
  };
  const id = encodeURIComponent(job.jobId);
  const ended = ENDED.has(job.state);
  return (
    <div>
      <div class="actions">
        {job.state === "PAUSED" ? (
          <button type="button" disabled={busy !== undefined} onClick={() => act("Resume", "POST", `/v1/jobs/${id}:resume`)}>
            Resume
          </button>
        ) : (
          <button type="button" disabled={busy !== undefined || ended} onClick={() => act("Pause", "POST", `/v1/jobs/${id}:pause`)}>
            Pause
          </button>
        )}
        <button type="button" disabled={busy !== undefined || ended} onClick={() => act("Trigger", "POST", `/v1/jobs/${id}:trigger`)}>
          Trigger now
        </button>
        {confirming ? (
          <>
            <button type="button" class="danger" disabled={busy !== undefined} onClick={() => act("Cancel", "DELETE", `/v1/jobs/${id}`)}>
              Yes, cancel the job
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </>
        ) : (
          <button type="button" class="danger" disabled={busy !== undefined || ended} onClick={() => setConfirming(true)}>
            Cancel…
          </button>
        )}
      </div>
      <ErrorBox error={error} />
    </div>
  );
}

/** What daylight saving did to a fire time; `nominal` is the wall time the expression names. */
function dstNote(dst: "gap" | "overlap", nominal: string | undefined): string {
  if (dst === "gap") return `moved: DST gap${nominal ? ` (${nominal.slice(11, 16)} does not exist)` : ""}`;
  return "DST overlap: the wall time occurs twice";
}

function SchedulePreview({ job }: { job: Job }) {
  const schedule = cronSchedule(job);
  const cron = schedule?.cron;
  const tz = schedule?.tz ?? "UTC";
  const preview = useLoad(
    (signal) =>
      typeof cron === "string"
        ? api<PreviewResponse>("GET", "/v1/schedules/preview", { query: { cron, tz, count: 10 }, signal })
        : Promise.resolve(undefined),
    [cron, tz],
  );
  if (typeof cron !== "string") return null;
  return (
    <Section title={`Next fire times (${tz})`}>
      <ErrorBox error={preview.error} />
      {preview.data ? (
        <table class="list" data-testid="preview-table">
          <thead>
            <tr>
              <th>In {tz}</th>
              <th>UTC</th>
              <th>Note</th>
            </tr>
          </thead>
          <tbody>
            {preview.data.times.map((time, i) => {
              const dst = preview.data?.dst?.[i];
              return (
                <tr key={time} class={dst ? "dst" : undefined}>
                  <td class="mono">{wallTime(time, tz)}</td>
                  <td class="mono">{utcTime(time)}</td>
                  <td>{dst ? <span class="badge dst-badge">{dstNote(dst, preview.data?.local?.[i])}</span> : null}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      ) : null}
    </Section>
  );
}

/** What a failed PATCH means to the person who sent it: a version conflict said plainly. */
function editError(err: unknown, sent: number): string | undefined {
  if (err instanceof ApiError && err.code === "VERSION_CONFLICT") {
    const now = typeof err.details.version === "number" ? ` (it is now at version ${err.details.version})` : "";
    return `Not saved: the job changed since you opened this form at version ${sent}${now}. Close the form to see the current job, then edit again.`;
  }
  return undefined;
}

/** A cron job's expression and zone, changed with PATCH only if the job is still at the version the form opened on. */
function ScheduleEditor({ job, onSaved, onConflict }: { job: Job; onSaved: (job: Job) => void; onConflict: () => void }) {
  // The version the user is looking at when the form opens; polls do not move it, so a change meanwhile is a conflict.
  const [base] = useState(job);
  const schedule = cronSchedule(base);
  const [cron, setCron] = useState(schedule?.cron ?? "");
  const [tz, setTz] = useState(schedule?.tz ?? "UTC");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const field = error instanceof ApiError ? error.details.field : undefined;
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      // A schedule replaces the old one whole: keep its other fields (jitter, misfire, overlap, window).
      const saved = await api<Job>("PATCH", `/v1/jobs/${encodeURIComponent(base.jobId)}`, {
        body: { schedule: { ...schedule, cron: cron.trim(), tz: tz.trim() }, version: base.version },
      });
      onSaved(saved);
    } catch (err) {
      setError(err);
      // Fetch the job as it is now, so the page (and the form opened next) shows the other change.
      if (err instanceof ApiError && err.code === "VERSION_CONFLICT") onConflict();
    } finally {
      setBusy(false);
    }
  };
  const conflict = editError(error, base.version);
  return (
    <form class="edit" onSubmit={submit} aria-label="Edit schedule">
      <label>
        Cron expression
        <input name="cron" value={cron} required onInput={(e) => setCron((e.target as HTMLInputElement).value)} />
        {field === "schedule.cron" ? <span class="field-error">{(error as ApiError).message}</span> : null}
      </label>
      <label>
        Time zone
        <input name="tz" value={tz} required onInput={(e) => setTz((e.target as HTMLInputElement).value)} />
        {field === "schedule.tz" ? <span class="field-error">{(error as ApiError).message}</span> : null}
      </label>
      <button type="submit" disabled={busy}>
        {busy ? "Saving…" : `Save (version ${base.version})`}
      </button>
      {conflict ? (
        <div class="error" role="alert" data-testid="version-conflict">
          {conflict}
        </div>
      ) : field === "schedule.cron" || field === "schedule.tz" ? null : (
        <ErrorBox error={error} />
      )}
    </form>
  );
}

const WINDOWS: [number, string][] = [
  [1, "last hour"],
  [24, "last 24 hours"],
  [24 * 7, "last 7 days"],
];

const REASONS: Record<string, string> = {
  misfire: "missed: the scheduler was down or behind, and the misfire policy did not run it",
  overlap: "the previous run was still going (overlap policy)",
  paused: "the job was paused",
  cancelled: "the job was cancelled",
  before_creation: "before the job was created",
  outside_window: "outside the schedule's startAt/endAt",
  schedule_changed: "the schedule changed",
  expired: "older than the history kept: it may have run",
};

const STATUS_LABEL: Record<OccurrenceItem["status"], string> = {
  dispatched: "dispatched",
  would_run: "would run (dry run)",
  skipped: "skipped",
  not_run: "missed",
  due: "due",
  unknown: "unknown",
};

/** GET /v1/jobs/{id}/occurrences: every fire time of a recent window (and the next hour) and what became of it. */
function RunLedger({ jobId }: { jobId: string }) {
  const [hours, setHours] = useState(24);
  const ledger = useLoad(
    (signal) => {
      const now = Date.now();
      return api<{ items: OccurrenceItem[] }>("GET", `/v1/jobs/${encodeURIComponent(jobId)}/occurrences`, {
        query: { from: new Date(now - hours * 3_600_000).toISOString(), to: new Date(now + 3_600_000).toISOString() },
        signal,
      });
    },
    [jobId, hours],
    5000,
  );
  const tooMany = ledger.error instanceof ApiError && ledger.error.status === 400 && ledger.error.details.field === "to";
  const items = ledger.data ? [...ledger.data.items].reverse() : undefined;
  return (
    <Section
      title="Run ledger"
      actions={
        <select aria-label="Window" value={String(hours)} onChange={(e) => setHours(Number((e.target as HTMLSelectElement).value))}>
          {WINDOWS.map(([h, label]) => (
            <option key={h} value={String(h)}>
              {label}
            </option>
          ))}
        </select>
      }
    >
      {tooMany ? (
        <div class="error" role="alert">
          This job fires too often for this window (at most 1,000 fire times): choose a shorter one.
        </div>
      ) : (
        <ErrorBox error={ledger.error} />
      )}
      {items === undefined ? null : items.length === 0 ? (
        <p class="muted empty">No fire time in this window.</p>
      ) : (
        <table class="list" data-testid="ledger-table">
          <thead>
            <tr>
              <th>Fire time</th>
              <th>Local</th>
              <th>Status</th>
              <th>Why / execution</th>
            </tr>
          </thead>
          <tbody>
            {items.map((o) => (
              <tr key={`${o.scheduledFor}/${o.executionId ?? ""}`} class={`ledger-${o.status}`}>
                <td>
                  <Time iso={o.scheduledFor} />
                </td>
                <td class="mono small">
                  {o.local || <span class="muted">not a fire time (trigger, backfill or an earlier schedule)</span>}
                  {o.dst ? <span class="badge dst-badge">{o.dst === "gap" ? "DST gap" : "DST overlap"}</span> : null}
                </td>
                <td>
                  <span class={`badge ledger-badge-${o.status}`}>{STATUS_LABEL[o.status]}</span>
                </td>
                <td class="small">
                  {o.reason ? <span>{REASONS[o.reason] ?? o.reason}</span> : null}
                  {o.executionState ? <StateBadge state={o.executionState} /> : null}
                  {o.executionId ? <div class="muted mono">{o.executionId}</div> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

/** "1.2 s", from an attempt's start to its end. */
function duration(from: string | null | undefined, to: string | null | undefined): string {
  if (!from || !to) return "";
  const ms = new Date(to).getTime() - new Date(from).getTime();
  if (!Number.isFinite(ms) || ms < 0) return "";
  return ms < 1000 ? `${ms} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60_000)} min`;
}

function errorText(error: unknown): string {
  if (error === undefined || error === null) return "";
  if (typeof error === "string") return error;
  if (typeof error === "object" && "message" in error && typeof (error as { message: unknown }).message === "string")
    return (error as { message: string }).message;
  return JSON.stringify(error);
}

/** A broker target's receipt (its execution's result): where the broker stored the message. */
function receiptText(target: Job["target"]["type"] | undefined, result: unknown): string {
  if (typeof result !== "object" || result === null) return "";
  const r = result as Record<string, unknown>;
  if (target === "nats" && typeof r.stream === "string")
    return `published: stream ${r.stream} seq ${String(r.seq)}${r.duplicate ? " (duplicate, dropped)" : ""}`;
  if (target === "amqp" && typeof r.exchange === "string") return `published: exchange ${r.exchange || "(default)"} key ${String(r.routingKey)}`;
  return "";
}

function History({ jobId, target }: { jobId: string; target: Job["target"]["type"] | undefined }) {
  const [pages, setPages] = useState(1);
  // The newest `pages` pages, reloaded together so a poll shows new attempts.
  const history = useLoad(
    async (signal) => {
      const items: ExecutionItem[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < pages; i++) {
        const page: Page<ExecutionItem> = await api<Page<ExecutionItem>>("GET", `/v1/jobs/${encodeURIComponent(jobId)}/executions`, {
          query: { limit: 50, cursor },
          signal,
        });
        items.push(...page.items);
        cursor = page.nextCursor;
        if (cursor === null) break;
      }
      return { items, more: cursor !== null };
    },
    [jobId, pages],
    3000,
  );
  return (
    <Section
      title="Executions"
      actions={
        <button type="button" onClick={history.reload}>
          Refresh
        </button>
      }
    >
      <ErrorBox error={history.error} />
      {history.data === undefined ? null : history.data.items.length === 0 ? (
        <p class="muted empty">No execution yet.</p>
      ) : (
        <table class="list" data-testid="executions-table">
          <thead>
            <tr>
              <th>Scheduled for</th>
              <th>Attempt</th>
              <th>State</th>
              <th>Dispatched</th>
              <th>Started</th>
              <th>Finished</th>
              <th>Worker</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {history.data.items.map((e) => (
              <tr key={`${e.executionId}/${e.attempt}`}>
                <td>
                  <Time iso={e.scheduledFor} />
                  <div class="muted small mono">{e.executionId}</div>
                </td>
                <td>{e.attempt}</td>
                <td>
                  <StateBadge state={e.state} />
                  {e.throttledMs ? <div class="muted small">throttled {e.throttledMs} ms</div> : null}
                </td>
                <td>
                  <Time iso={e.dispatchedAt} />
                  {e.dispatchedBy ? <div class="muted small mono">by {e.dispatchedBy}</div> : null}
                </td>
                <td>
                  <Time iso={e.startedAt} />
                </td>
                <td>
                  <Time iso={e.finishedAt} />
                  {e.finishedAt ? <div class="muted small">took {duration(e.startedAt, e.finishedAt)}</div> : null}
                </td>
                <td class="mono small">
                  {e.workerId ?? "—"}
                  {receiptText(target, e.result) ? (
                    <div class="muted small" data-testid="receipt">
                      {receiptText(target, e.result)}
                    </div>
                  ) : null}
                </td>
                <td class="small error-text">{errorText(e.error)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {history.data?.more ? (
        <div class="pager">
          <button type="button" onClick={() => setPages((p) => p + 1)}>
            Older executions
          </button>
        </div>
      ) : null}
    </Section>
  );
}

export function JobPage({ jobId }: { jobId: string }) {
  const job = useLoad((signal) => api<Job>("GET", `/v1/jobs/${encodeURIComponent(jobId)}`, { signal }), [jobId], 3000);
  const [message, setMessage] = useState<string | undefined>(undefined);
  const [editing, setEditing] = useState(false);
  const j = job.data;
  return (
    <>
      <p>
        <a href={href(["jobs"])}>← Jobs</a>
      </p>
      <ErrorBox error={job.error} />
      {j ? (
        <Section
          title={j.name}
          actions={
            <>
              <StateBadge state={j.state} />
              <span class="muted small">version {j.version}</span>
            </>
          }
        >
          <Actions
            job={j}
            onDone={(m) => {
              setMessage(m);
              job.reload();
            }}
          />
          {message ? (
            <p class="notice" role="status">
              {message}
            </p>
          ) : null}
          {cronSchedule(j) && !ENDED.has(j.state) ? (
            <div class="edit-box">
              <button type="button" class="link" aria-expanded={editing} onClick={() => setEditing(!editing)}>
                {editing ? "Close the schedule form" : "Edit schedule…"}
              </button>
              {editing ? (
                <ScheduleEditor
                  job={j}
                  onSaved={(saved) => {
                    setEditing(false);
                    setMessage(`Schedule saved: version ${saved.version}`);
                    job.reload();
                  }}
                  onConflict={job.reload}
                />
              ) : null}
            </div>
          ) : null}
          <dl class="fields">
            <dt>Job id</dt>
            <dd class="mono">{j.jobId}</dd>
            <dt>Target</dt>
            <dd class="mono">{describeTarget(j)}</dd>
            <dt>Schedule</dt>
            <dd>{describeSchedule(j)}</dd>
            <dt>Next run</dt>
            <dd>
              <Time iso={j.nextRunAt} rel />
              {j.nextRunAtLocal ? <span class="muted small"> · {j.nextRunAtLocal}</span> : null}
            </dd>
            <dt>Retry</dt>
            <dd>{`${j.retry.maxAttempts} attempts, backoff ${j.retry.backoffSeconds} s up to ${j.retry.maxBackoffSeconds} s`}</dd>
            <dt>Timeout</dt>
            <dd>{`${j.timeoutSeconds} s`}</dd>
            <dt>Priority</dt>
            <dd>{j.priority}</dd>
            <dt>Mode</dt>
            <dd>{j.mode === "dry_run" ? "dry run: occurrences recorded, never run" : "live"}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={j.createdAt} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <Time iso={j.updatedAt} />
            </dd>
          </dl>
          <details>
            <summary>Payload and schedule</summary>
            <Json value={{ payload: j.payload, schedule: j.schedule }} />
          </details>
        </Section>
      ) : null}
      {j ? <SchedulePreview job={j} /> : null}
      {j ? <RunLedger jobId={jobId} /> : null}
      <History jobId={jobId} target={j?.target.type} />
    </>
  );
}
