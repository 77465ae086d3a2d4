// A job: its fields, its actions (pause, resume, trigger, cancel), for a
// recurring job its next fire times (the server's preview: in the job's zone
// and UTC, with daylight-saving moves marked), and its executions history.

import { useState } from "preact/hooks";
import { api, type Execution, type Job, type Page, type Preview } from "../api";
import { ErrorBox, Json, Section, StateBadge, Time, useLoad } from "../components";
import { href } from "../router";
import { utcTime, wallTime } from "../time";
import { describeSchedule, describeTarget } from "./Jobs";

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
  const cron = job.schedule.cron;
  const tz = job.schedule.tz ?? "UTC";
  const preview = useLoad(
    (signal) =>
      typeof cron === "string"
        ? api<Preview>("GET", "/v1/schedules/preview", { query: { cron, tz, count: 10 }, signal })
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

function errorText(error: unknown): string {
  if (error === undefined || error === null) return "";
  if (typeof error === "string") return error;
  if (typeof error === "object" && "message" in error && typeof (error as { message: unknown }).message === "string")
    return (error as { message: string }).message;
  return JSON.stringify(error);
}

function History({ jobId }: { jobId: string }) {
  const [pages, setPages] = useState(1);
  // The newest `pages` pages, reloaded together so a poll shows new attempts.
  const history = useLoad(
    async (signal) => {
      const items: Execution[] = [];
      let cursor: string | null = null;
      for (let i = 0; i < pages; i++) {
        const page: Page<Execution> = await api<Page<Execution>>("GET", `/v1/jobs/${encodeURIComponent(jobId)}/executions`, {
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
                  <Time iso={e.startedAt} />
                </td>
                <td>
                  <Time iso={e.finishedAt} />
                </td>
                <td class="mono small">{e.workerId ?? "—"}</td>
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
            <dd>{j.retry ? `${j.retry.maxAttempts} attempts, backoff ${j.retry.backoffSeconds} s up to ${j.retry.maxBackoffSeconds} s` : "—"}</dd>
            <dt>Timeout</dt>
            <dd>{j.timeoutSeconds !== undefined ? `${j.timeoutSeconds} s` : "—"}</dd>
            <dt>Priority</dt>
            <dd>{j.priority ?? 0}</dd>
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
      <History jobId={jobId} />
    </>
  );
}
